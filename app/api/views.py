"""JSON shapes of the API (see DESIGN.md "Contracts"): extend them, never rename fields."""
from __future__ import annotations

from typing import Any

from app.citation_urls import cite_link, open_url
from app.timestamps import iso
from storage.evidence import EvidenceChunk
from storage.models import Job, Notebook, Revision, Source


def job_json(job: Job | None) -> dict[str, Any] | None:
    if job is None:
        return None
    return {
        "id": job.id,
        "state": job.state,
        "done": job.done,
        "total": job.total,
        "current_resource_id": job.current_resource_id,
        "activity": job.activity,
        "rerun_requested": job.rerun_requested,
        "error": job.error,
        "created_at": iso(job.created_at),
        "finished_at": iso(job.finished_at),
    }


def revision_json(revision: Revision | None) -> dict[str, Any] | None:
    if revision is None:
        return None
    return {"id": revision.id, "number": revision.number, "completed_at": iso(revision.completed_at)}


def notebook_json(
    notebook: Notebook, *, revision: Revision | None, job: Job | None, resource_count: int, failing_count: int,
    is_owner: bool,
) -> dict[str, Any]:
    return {
        "id": notebook.id,
        "title": notebook.title,
        "visibility": notebook.visibility,
        "conversation_mode": notebook.conversation_mode,
        "table_id": notebook.table_id,
        "creator_id": notebook.creator_id,
        "is_owner": is_owner,
        "resource_count": resource_count,
        "failing_count": failing_count,
        "active_revision": revision_json(revision),
        "job": job_json(job),
        "created_at": iso(notebook.created_at),
        "updated_at": iso(notebook.updated_at),
    }


def source_json(source: Source) -> dict[str, Any]:
    return {
        "id": source.id,
        "kind": source.kind,
        "field": source.field,
        "value": source.value,
        "state": source.state,
        "error": {"code": source.error_code, "message": source.error} if source.error_code else None,
        "mime": source.mime,
        "title": source.title,
        "page_count": source.page_count,
        "pages_needing_ocr": source.pages_needing_ocr,
        "duration_seconds": source.duration_seconds,
        "transcribed_by": source.transcribed_by,
        "checked_at": iso(source.checked_at),
    }


def evidence_json(notebook_id: str, chunk: EvidenceChunk, title: str) -> dict[str, Any]:
    """``title``: what to call the chunk's document (app.services.titles.chunk_title)."""
    return {
        "chunk_id": chunk.chunk_id,
        "revision_id": chunk.revision_id,
        "resource_id": chunk.resource_id,
        "source_id": chunk.source_id,
        "title": title,
        "text": chunk.text,
        "locator": chunk.locator,
        "open_url": open_url(notebook_id, chunk),
        "cite": cite_link(notebook_id, chunk),
    }
