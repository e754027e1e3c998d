"""The built-in read-only notebook tools, wrapped around the server's per-turn closures.

The server owns authorisation and storage: it passes three plain callables already bound to the
authorised, pinned context (notebooks, revisions, selected sources). This module only gives them
names, JSON schemas for a model, and hard bounds, so that no tool call, whatever a model asks for,
can return an unbounded amount of text. The durable analysis tools (``analysis_tools``) are
added with ``ToolRegistry.register``; the engines discover tools from the registry.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.analysis.types import KINDS, MAX_INSTRUCTION_CHARS
from pipeline.answering.types import EvidenceItem, ToolRegistry, ToolSpec

SEARCH_NOTEBOOK = "search_notebook"
READ_EVIDENCE = "read_evidence"
INSPECT_SOURCES = "inspect_sources"
START_ANALYSIS = "start_analysis"
INSPECT_ANALYSES = "inspect_analyses"
READ_ANALYSIS = "read_analysis"
# A knowledge-mode turn's tools (``knowledge_tools``); named here so that an engine can ask for them.
SEARCH_KNOWLEDGE = "search_knowledge"
READ_NOTE = "read_note"
PROPOSE_BLOCK_EDIT = "propose_block_edit"

MAX_SEARCH_RESULTS = 50
DEFAULT_SEARCH_RESULTS = 8
MAX_QUERY_CHARS = 2000
MAX_CHUNK_ID_CHARS = 100
MAX_SOURCES_LISTED = 200
MAX_METADATA_CHARS = 300
MAX_ANALYSES_LISTED = 20
MAX_ANALYSIS_ID_CHARS = 64

SearchFunction = Callable[[str, int], list[EvidenceItem]]
ReadFunction = Callable[[str], EvidenceItem | None]
InspectFunction = Callable[[], list[dict[str, Any]]]
StartAnalysisFunction = Callable[[str, str], dict[str, Any]]
ReadAnalysisFunction = Callable[[str], dict[str, Any]]


def notebook_tools(*, search: SearchFunction, read: ReadFunction, inspect: InspectFunction) -> ToolRegistry:
    """A registry holding ``search_notebook``, ``read_evidence`` and ``inspect_sources``.

    ``search(query, limit)`` must return at most ``limit`` items, best first (it is cut anyway);
    ``read(chunk_id)`` returns the chunk in the pinned revision or None; ``inspect()`` returns one
    dict of metadata per selected source (bounded here to 200 sources and short scalar values).
    """
    return ToolRegistry(
        [
            ToolSpec(
                name=SEARCH_NOTEBOOK,
                description=(
                    "Hybrid keyword and semantic search over the notebook's sources. Returns the best "
                    "matching chunks, each with its chunk_id, title, locator and text."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "What to look for."},
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_SEARCH_RESULTS,
                            "default": DEFAULT_SEARCH_RESULTS,
                            "description": "How many chunks to return.",
                        },
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
                function=lambda query, limit: list(search(query, limit))[:limit],
            ),
            ToolSpec(
                name=READ_EVIDENCE,
                description="Read the exact text of one chunk by its chunk_id (as returned by a search).",
                parameters={
                    "type": "object",
                    "properties": {"chunk_id": {"type": "string", "maxLength": MAX_CHUNK_ID_CHARS}},
                    "required": ["chunk_id"],
                    "additionalProperties": False,
                },
                function=read,
            ),
            ToolSpec(
                name=INSPECT_SOURCES,
                description="List the notebook's selected sources with bounded metadata (title, kind, state).",
                parameters={"type": "object", "properties": {}, "additionalProperties": False},
                function=lambda: [_bounded(source) for source in inspect()[:MAX_SOURCES_LISTED]],
            ),
        ]
    )


def analysis_tools(
    *, start: StartAnalysisFunction, inspect: InspectFunction, read: ReadAnalysisFunction
) -> list[ToolSpec]:
    """``start_analysis``, ``inspect_analyses`` and ``read_analysis``: the durable hierarchical
    analysis of the notebook's pinned revision, for questions one search cannot answer.

    ``start(kind, instruction)`` starts one over the turn's sources and returns its metadata;
    ``inspect()`` lists the notebook's analyses (cut to 20, scalar metadata only);
    ``read(analysis_id)`` returns its state and, once done, its points with their evidence
    (``EvidenceItem`` values, so the points' chunks become citeable this turn).
    """
    return [
        ToolSpec(
            name=START_ANALYSIS,
            description=(
                "Start a durable analysis that reads every selected source in bounded batches and "
                "reduces their summaries (for summaries of many sources, timelines, briefings, "
                "disagreements). It runs in the background for minutes: tell the person it started; "
                "read it later with read_analysis."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(KINDS), "default": "summary"},
                    "instruction": {"type": "string", "maxLength": MAX_INSTRUCTION_CHARS, "default": "",
                                    "description": "What to look for, in the person's words."},
                },
                "additionalProperties": False,
            },
            function=lambda kind="summary", instruction="": _bounded(start(kind, instruction)),
        ),
        ToolSpec(
            name=INSPECT_ANALYSES,
            description="List the notebook's analyses, newest first, with their state and progress.",
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
            function=lambda: [_bounded(analysis) for analysis in inspect()[:MAX_ANALYSES_LISTED]],
        ),
        ToolSpec(
            name=READ_ANALYSIS,
            description=(
                "Read one analysis by its analysis_id: its state and, once it succeeded, its points, "
                "each with the evidence chunks it rests on (cite those chunk ids)."
            ),
            parameters={
                "type": "object",
                "properties": {"analysis_id": {"type": "string", "maxLength": MAX_ANALYSIS_ID_CHARS}},
                "required": ["analysis_id"],
                "additionalProperties": False,
            },
            function=read,
        ),
    ]


def _bounded(metadata: dict[str, Any]) -> dict[str, Any]:
    """Keep only scalar values, strings cut to ``MAX_METADATA_CHARS``: metadata is never a payload."""
    bounded: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, str):
            bounded[str(key)] = value[:MAX_METADATA_CHARS]
        elif value is None or isinstance(value, (bool, int, float)):
            bounded[str(key)] = value
    return bounded
