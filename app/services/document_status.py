"""A linked document's status, as the knowledge-base API reports it (docs/decisions/0020):

- ``AVAILABLE``: the notebook's active revision searches the bytes the last sync downloaded;
- ``INDEXING``: they were downloaded and wait for (or are in) the notebook's ingestion;
- ``FAIL``: the download failed (the bytes held before, if any, stay searchable), or the
  extraction of these bytes did. A failed document is tried again when its file changes, or by
  ``POST /api/knowledge-base/documents/retry-failed``; a sync of the unchanged file skips it.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.timestamps import iso
from storage import linked, revisions
from storage.models import LinkedDocument, Notebook, Source

AVAILABLE, INDEXING, FAIL = "AVAILABLE", "INDEXING", "FAIL"


def documents_json(session: Session, notebook: Notebook, documents: list[LinkedDocument]) -> list[dict[str, Any]]:
    active = {
        s.resource_id: s for s in revisions.sources(session, notebook.active_revision_id)
    } if notebook.active_revision_id else {}
    return [_document_json(d, active.get(linked.member_id(d.id))) for d in documents]


def status_of(document: LinkedDocument, source: Source | None) -> tuple[str, dict[str, str] | None]:
    if document.error_code:
        return FAIL, {"code": document.error_code, "message": document.error or ""}
    if source is None or source.fingerprint != document.content_hash or source.state in ("pending", "indexing"):
        return INDEXING, None
    if source.state == "error":
        return FAIL, {"code": source.error_code or "EXTRACTION_FAILED", "message": source.error or ""}
    return AVAILABLE, None


def _document_json(document: LinkedDocument, source: Source | None) -> dict[str, Any]:
    status, error = status_of(document, source)
    return {
        "id": document.id,
        "resource_id": linked.member_id(document.id),
        "linked_folder_id": document.linked_folder_id,
        "file_id": document.file_id,
        "name": document.name,
        "mime_type": document.mime,
        "size": document.size,
        "modified_time": iso(document.modified_time),
        "synced_at": iso(document.synced_at),
        "status": status,
        "error": error,
    }
