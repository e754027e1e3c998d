"""The knowledge tools of a knowledge-mode chat turn (issue #20 item 6), around the server's closures.

Two read tools, free to call: ``search_knowledge`` (notes and concepts, each with the document
passages its evidence points to, citeable this turn) and ``read_note`` (a note's current version:
its blocks by ``block_key``, its claims, and the version id an edit must name). One write tool,
``propose_block_edit``, which writes nothing: it asks the person the agent acts for to approve one
edit with its exact arguments; the edit happens when they approve it, on the path a person's own
edit takes. Plain notebook chat never gets these tools (the seed: notebook chat has no tool that
changes the vault).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.knowledge.ask import MAX_HITS
from pipeline.knowledge.edit import MAX_BLOCK_CHARS
from pipeline.answering.tools import MAX_QUERY_CHARS, PROPOSE_BLOCK_EDIT, READ_NOTE, SEARCH_KNOWLEDGE
from pipeline.answering.types import ToolSpec

DEFAULT_KNOWLEDGE_HITS = 6
MAX_ID_CHARS = 32
MAX_BLOCK_KEY_CHARS = 40

SearchKnowledge = Callable[[str, int], list[dict[str, Any]]]
ReadNote = Callable[[str], dict[str, Any]]
ProposeEdit = Callable[[str, str, str, str], dict[str, Any]]


def knowledge_tools(*, search: SearchKnowledge, read_note: ReadNote, propose_edit: ProposeEdit) -> list[ToolSpec]:
    """``search(query, limit)`` returns at most ``limit`` hits, best first; ``read_note(note_id)``
    the note's current version; ``propose_edit(note_id, expected_version_id, block_key, text)``
    the pending approval (or ``UNCHANGED``). Each raises ``PipelineError`` with the API's code."""
    return [
        ToolSpec(
            name=SEARCH_KNOWLEDGE,
            description=(
                "Search the notebook's knowledge: atomic notes written from its documents and concepts "
                "that gather notes across documents, in turns. Each hit has its id, version_id, title "
                "and the document passages (chunk_id, page, text) its claims rest on: cite those."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS, "default": DEFAULT_KNOWLEDGE_HITS},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            function=lambda query, limit: list(search(query, limit))[:limit],
        ),
        ToolSpec(
            name=READ_NOTE,
            description=(
                "Read a note's current version by its note id: title, summary, blocks (block_key, kind, "
                "text), claims with their evidence, and version_id, which an edit must name."
            ),
            parameters={
                "type": "object",
                "properties": {"note_id": {"type": "string", "maxLength": MAX_ID_CHARS}},
                "required": ["note_id"],
                "additionalProperties": False,
            },
            function=read_note,
        ),
        ToolSpec(
            name=PROPOSE_BLOCK_EDIT,
            description=(
                "Propose rewriting one block of a note. It changes nothing by itself: the person must "
                "approve it first (tell them so). Read the note first and pass its version_id as "
                "expected_version_id; a note changed since is refused with VERSION_CONFLICT (read it "
                "again), and the same text as now is UNCHANGED."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "note_id": {"type": "string", "maxLength": MAX_ID_CHARS},
                    "expected_version_id": {"type": "string", "maxLength": MAX_ID_CHARS},
                    "block_key": {"type": "string", "maxLength": MAX_BLOCK_KEY_CHARS},
                    "text": {"type": "string", "maxLength": MAX_BLOCK_CHARS},
                },
                "required": ["note_id", "expected_version_id", "block_key", "text"],
                "additionalProperties": False,
            },
            function=propose_edit,
        ),
    ]
