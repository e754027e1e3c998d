"""The knowledge-base sync API of ``knowledge-base-sync.es.txt``: a knowledge base is a notebook,
its documents are the files of its linked folders (docs/decisions/0020).

These routes answer in the seed's envelope, so its clients work unchanged: ``{"code": 0,
"message": "OK", "data": ...}``, and a request that is wrong ``{"code": 40000, "message": ...}``
with our stable string code beside it as ``error``. The sync has one route per caller kind, as in
the seed (``/api/agent/...``, ``/api/workflow/...``) besides ``/api/knowledge-base/sync``; all
share one rate-limit counter per caller.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

from app.api.access import owned_notebook, visible_notebook
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, paging, refuse_unknown_fields, string_field, string_list
from app.services.document_status import FAIL, documents_json, status_of
from app.services.drive_connectors import SUPPORTED
from app.services.ingest import request_ingest
from app.services.sync_requests import request_sync, sync_folders
from storage import linked, revisions

bp = Blueprint("knowledge_base", __name__, url_prefix="/api")
BAD_REQUEST, TOO_MANY = 40000, 42900
MAX_KNOWLEDGE_BASES = 100
MAX_DOCUMENTS = 1000


def envelope(data: Any):  # type: ignore[no-untyped-def]
    return jsonify({"code": 0, "message": "OK", "data": data})


def refusal(status: int, code: int, message: str, error: str, **headers: str):  # type: ignore[no-untyped-def]
    response = jsonify({"code": code, "message": message, "error": error})
    response.status_code = status
    response.headers.update(headers)
    return response


@bp.errorhandler(ApiError)
def _seed_shaped(err: ApiError):  # type: ignore[no-untyped-def]
    """Every refusal of these routes in the seed's shape (the rest of the API keeps its own)."""
    if err.status == 429:
        return refusal(429, TOO_MANY, err.message, err.code, **{"Retry-After": str(err.extra.get("retry_after", 60))})
    return refusal(err.status, BAD_REQUEST if err.status == 400 else err.status * 100, err.message, err.code)


@bp.post("/knowledge-base/sync")
@bp.post("/agent/knowledge-base/sync", endpoint="sync_agent")
@bp.post("/workflow/knowledge-base/sync", endpoint="sync_workflow")
def sync():  # type: ignore[no-untyped-def]
    """Validate, plan, answer "accepted"; the round runs on a worker (tasks.sync)."""
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("source", "knowledge_base_ids"))
    source = body.get("source")
    if source not in SUPPORTED:
        return refusal(
            400, BAD_REQUEST, f"Unsupported source: {source}. Supported: {', '.join(SUPPORTED)}", "UNSUPPORTED_SOURCE"
        )
    # Absent: all of the caller's; an empty list names none (it must never mean "all": a sync deletes).
    ids = string_list(body, "knowledge_base_ids", max_items=MAX_KNOWLEDGE_BASES, required=False) \
        if body.get("knowledge_base_ids") is not None else None
    services().limiter.hit("sync", principal.user_id)  # one counter per caller, every route
    return envelope(request_sync(services(), principal, source, ids).data())


@bp.get("/knowledge-base/<notebook_id>/documents")
def documents(notebook_id: str):  # type: ignore[no-untyped-def]
    """Each document with its status (poll until ``AVAILABLE``), modified time and error."""
    principal = current_principal()
    page = paging(default_per_page=100, max_per_page=500)
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        everything = linked.notebook_documents(session, notebook.id)
        window = everything[page.offset : page.offset + page.per_page]
        items = documents_json(session, notebook, window)
    return envelope(page.shown(items, len(everything)))


@bp.post("/knowledge-base/documents/retry-failed")
def retry_failed():  # type: ignore[no-untyped-def]
    """Try the knowledge base's failed documents again (those named, or all): a failed download
    is downloaded again, a failed extraction extracted again, changed or not."""
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("knowledge_base_id", "document_ids"))
    notebook_id = string_field(body, "knowledge_base_id", required=True, max_len=64) or ""
    wanted = string_list(body, "document_ids", max_items=MAX_DOCUMENTS, required=False) \
        if body.get("document_ids") is not None else None
    svc = services()
    with svc.db.session() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        active = {s.resource_id: s for s in revisions.sources(session, notebook.active_revision_id)} if notebook.active_revision_id else {}
        failed = [
            d for d in linked.notebook_documents(session, notebook.id, wanted)
            if status_of(d, active.get(linked.member_id(d.id)))[0] == FAIL
        ]
        undownloaded = [d for d in failed if d.error_code]
        linked.forget_failures(undownloaded)
        folder_ids = sorted({d.linked_folder_id for d in undownloaded})
        extract_again = [linked.member_id(d.id) for d in failed if not d.error_code]
    if folder_ids:
        sync_folders(svc, principal, folder_ids, trigger="retry")
    if extract_again:
        request_ingest(svc, notebook_id, requested_by=principal.user_id, params={"force_resource_ids": extract_again})
    return envelope({
        "accepted": bool(failed), "knowledge_base_id": notebook_id, "matched_doc_count": len(failed),
        "download_again_count": len(undownloaded), "extract_again_count": len(extract_again),
    })
