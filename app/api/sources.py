"""Per-resource membership and state: list, add, remove."""
from __future__ import annotations

from collections import defaultdict

from flask import Blueprint, request, send_file

from app.api.access import owned_notebook, visible_notebook
from app.api.views import job_json, source_json
from app.timestamps import iso
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, paging, refuse_unknown_fields, string_list
from app.services.ingest import request_ingest
from app.services.titles import record_titles
from pipeline.catalogue import MAX_RESOURCES_PER_REQUEST
from storage import jobs, linked, notebooks, revisions
from pipeline.types import FILE_KINDS
from storage.models import Source

bp = Blueprint("sources", __name__, url_prefix="/api/notebooks")
ATTACHMENT_POLICY = "sandbox; default-src 'none'; frame-ancestors 'none'"

def resource_state(sources: list[Source], waiting: bool) -> str:
    """One state per resource: unfinished work first, then the best evidence it still has.

    ``waiting``: the resource has no sources yet because no ingestion has covered it.
    """
    if not sources:
        return "pending" if waiting else "error"
    states = {s.state for s in sources}
    for state in ("indexing", "pending"):
        if state in states:
            return state
    if states == {"error"}:
        return "error"
    return "stale" if "stale" in states else "available"


# A member whose record lost its attachment and URL values: the code the selector gives such
# records (pipeline.catalogue.sources), in the shape of a source's error.
NO_SOURCE = {"code": "NO_SOURCE", "message": "The record has no attachment or URL value any more."}


@bp.get("/<notebook_id>/sources")
def list_sources(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    page = paging(default_per_page=50, max_per_page=200)
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        job = jobs.active_job(session, notebook)
        revision_id = (job.revision_id if job and job.revision_id else None) or notebook.active_revision_id
        by_resource: dict[str, list[Source]] = defaultdict(list)
        for source in revisions.sources(session, revision_id) if revision_id else []:
            by_resource[source.resource_id].append(source)
        members = notebooks.members(session, notebook)
        window = members[page.offset : page.offset + page.per_page]
        items = []
        titles = {**record_titles(services(), notebook.table_id), **linked.titles(session, notebook.id)}
        revision = revisions.get(session, notebook, revision_id) if revision_id else None
        covered_at = revision.completed_at if revision else None
        for member in window:
            sources = by_resource.get(member.resource_id, [])
            waiting = job is not None or covered_at is None or member.added_at > covered_at
            state = resource_state(sources, waiting)
            shown = [source_json(s) for s in sources]
            errors = [s["error"] for s in shown if s["error"]]
            items.append(
                {
                    "resource_id": member.resource_id,
                    "title": titles.get(member.resource_id),
                    "state": state,
                    "last_checked_at": iso(member.last_success_at),
                    "failures": member.failures,
                    "retry_at": iso(member.retry_at),
                    "error": errors[0] if errors else (NO_SOURCE if state == "error" and not sources else None),
                    "sources": shown,
                }
            )
    return page.shown(items, len(members))


@bp.post("/<notebook_id>/sources")
def add_sources(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("resource_ids",))
    resource_ids = string_list(body, "resource_ids", max_items=MAX_RESOURCES_PER_REQUEST, required=True)
    svc = services()
    with svc.db.session() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        svc.catalogue.validate(notebook.table_id, resource_ids)
        added = notebooks.add_resources(session, principal, notebook, resource_ids)
    outcome, job = (
        request_ingest(svc, notebook_id, requested_by=principal.user_id) if added else ("not_needed", None)
    )
    return {"added": added, "ingest": outcome, "job": job_json(job)}, 202


@bp.delete("/<notebook_id>/sources/<path:resource_id>")
def remove_source(notebook_id: str, resource_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    if linked.document_id_of(resource_id):
        raise ApiError(
            409, "LINKED_DOCUMENT", "This document comes from a linked folder: unlink the folder, or remove the file from it."
        )
    with services().db.session() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        if not notebooks.remove_resource(session, notebook, resource_id):
            raise ApiError(404, "RESOURCE_NOT_IN_NOTEBOOK", "That resource is not in this notebook.")
    return "", 204


@bp.post("/<notebook_id>/sources/<path:resource_id>/refresh")
def retry_resource(notebook_id: str, resource_id: str):  # type: ignore[no-untyped-def]
    """Re-extract one resource, bypassing reuse; every other source is copied from the active revision."""
    principal = current_principal()
    svc = services()
    with svc.db.reader() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        if resource_id not in notebooks.member_ids(session, notebook):
            raise ApiError(404, "RESOURCE_NOT_IN_NOTEBOOK", "That resource is not in this notebook.")
    svc.limiter.hit("refresh", principal.user_id)
    outcome, job = request_ingest(
        svc, notebook_id, requested_by=principal.user_id, params={"force_resource_ids": [resource_id]}
    )
    return {"ingest": outcome, "job": job_json(job)}, 202


@bp.get("/<notebook_id>/sources/<source_id>/file")
def source_file(notebook_id: str, source_id: str):  # type: ignore[no-untyped-def]
    """The exact bytes a revision's attachment source was extracted from (for the PDF viewer).

    Attachment bytes are data, never a document of our origin: an HTML attachment opened here
    could otherwise run script (even one loaded from another attachment, which ``script-src
    'self'`` allows) as whoever opens it. So every file is a download, the type is never sniffed,
    and the response carries a sandboxing CSP (an opaque origin with no script) for a browser that
    renders it anyway. The viewer fetches PDFs as bytes, which none of this affects.
    """
    principal = current_principal()
    revision_id = request.args.get("revision", "")
    svc = services()
    with svc.db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        source = revisions.source_in(session, notebook, revision_id, source_id)
        if source is None or source.kind not in FILE_KINDS or source.resource_id not in notebooks.member_ids(session, notebook):
            raise ApiError(404, "SOURCE_NOT_FOUND", "No such attachment source in that revision.")
        sha256, mime, name = source.content_hash, source.mime, source.value.rsplit("/", 1)[-1]
    if not sha256 or not svc.blobs.has(sha256):
        raise ApiError(410, "SOURCE_BYTES_GONE", "The bytes of this source are no longer kept.")
    response = send_file(
        svc.blobs.path(sha256), mimetype=mime or "application/octet-stream", as_attachment=True, download_name=name
    )
    response.headers["Content-Security-Policy"] = ATTACHMENT_POLICY
    response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
    return response
