"""The built-in read-only notebook tools, wrapped around the server's per-turn closures.

The server owns authorisation and storage: it passes three plain callables already bound to the
authorised, pinned context (notebooks, revisions, selected sources). This module only gives them
names, JSON schemas for a model, and hard bounds, so that no tool call, whatever a model asks for,
can return an unbounded amount of text. More tools (durable analysis) are added later with
``ToolRegistry.register``; the engines discover tools from the registry and need no change.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.answering.types import EvidenceItem, ToolRegistry, ToolSpec

SEARCH_NOTEBOOK = "search_notebook"
READ_EVIDENCE = "read_evidence"
INSPECT_SOURCES = "inspect_sources"

MAX_SEARCH_RESULTS = 50
DEFAULT_SEARCH_RESULTS = 8
MAX_QUERY_CHARS = 2000
MAX_CHUNK_ID_CHARS = 100
MAX_SOURCES_LISTED = 200
MAX_METADATA_CHARS = 300

SearchFunction = Callable[[str, int], list[EvidenceItem]]
ReadFunction = Callable[[str], EvidenceItem | None]
InspectFunction = Callable[[], list[dict[str, Any]]]


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


def _bounded(metadata: dict[str, Any]) -> dict[str, Any]:
    """Keep only scalar values, strings cut to ``MAX_METADATA_CHARS``: metadata is never a payload."""
    bounded: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, str):
            bounded[str(key)] = value[:MAX_METADATA_CHARS]
        elif value is None or isinstance(value, (bool, int, float)):
            bounded[str(key)] = value
    return bounded
