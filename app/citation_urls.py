"""Where a cited passage can be opened, shared by the API's JSON views and the services that
build citations (chat tools, stored transcripts), so services never import the API layer."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote, urldefrag

from flask import url_for

from pipeline.citation_links import CiteTarget
from pipeline.streaming.moments import moment_url
from storage.evidence import EvidenceChunk


def open_url(notebook_id: str, chunk: EvidenceChunk) -> str:
    """Where a citation leads a person: the original validated URL for web evidence, at the
    section the passage is in (``#fragment``, the nearest heading's id) or, for a recording, at
    the cited second (``pipeline.streaming.moments``); else the dashboard's evidence page for that
    revision (the JSON is ``/api/.../evidence/...``)."""
    if chunk.source_kind == "url" and "start" in chunk.locator:  # a recording, at the cited second
        return moment_url(chunk.source_final_url or chunk.source_value, chunk.locator["start"])
    if chunk.source_kind == "url":
        return web_evidence_url(chunk.source_final_url or chunk.source_value, chunk.locator.get("fragment"))
    return evidence_page_url(CiteTarget(notebook_id, chunk.revision_id, chunk.chunk_id))


def web_evidence_url(page_url: str, fragment: str | None) -> str:
    """The original page at the section the passage is in (``#fragment``), when known."""
    page_url = urldefrag(page_url).url
    return f"{page_url}#{quote(fragment)}" if fragment else page_url


def evidence_page_url(target: CiteTarget) -> str:
    """The dashboard's page for a cited passage in its pinned revision."""
    base = url_for("dashboard.evidence", notebook_id=target.notebook_id, chunk_id=target.chunk_id)
    return f"{base}?revision={quote(target.revision_id)}"


def cite_link(notebook_id: str, chunk: EvidenceChunk) -> str:
    return CiteTarget(notebook_id, chunk.revision_id, chunk.chunk_id).link


def passage_link(notebook_id: str, chunk: EvidenceChunk, title: str) -> dict[str, Any]:
    """Where a passage is and how to open it: a citation without its quote (chat's and an
    analysis's alike, so the dashboard opens both the same way)."""
    return {
        "notebook_id": notebook_id,
        "resource_id": chunk.resource_id,
        "title": title,
        "revision_id": chunk.revision_id,
        "source_id": chunk.source_id,
        "chunk_id": chunk.chunk_id,
        "locator": chunk.locator,
        "open_url": open_url(notebook_id, chunk),
        "cite": cite_link(notebook_id, chunk),
    }
