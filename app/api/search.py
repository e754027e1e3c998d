"""Search a notebook's active revision, and resolve a citation in its pinned revision."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from app.api.access import visible_notebook
from app.api.views import evidence_json
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import limit_arg
from app.services.titles import chunk_title, record_titles
from pipeline.citation_links import CiteTarget
from pipeline.streaming.moments import TIME_PLACEHOLDER, moment_url
from pipeline.types import FILE_KINDS
from storage import evidence, revisions
from storage.retrieval import MAX_RESULTS
from storage.scope import Principal

bp = Blueprint("search", __name__, url_prefix="/api/notebooks")
MAX_QUERY_CHARS = 2000


@bp.get("/<notebook_id>/search")
def search_notebook(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    query = (request.args.get("q") or "").strip()
    if not query:
        raise ApiError(400, "QUERY_REQUIRED", "Pass the search text as 'q'.")
    if len(query) > MAX_QUERY_CHARS:
        raise ApiError(400, "QUERY_TOO_LONG", f"'q' is at most {MAX_QUERY_CHARS} characters.")
    limit = limit_arg(default=10, maximum=MAX_RESULTS)
    svc = services()
    with svc.db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        if notebook.active_revision_id is None:
            raise ApiError(409, "NO_ACTIVE_REVISION", "This notebook has no indexed revision yet.")
        hits = svc.retriever.search(session, notebook, notebook.active_revision_id, query, limit=limit)
    titles = record_titles(svc, notebook.table_id)
    return {
        "revision_id": notebook.active_revision_id,
        "results": [
            {
                **_without_text(evidence_json(notebook_id, hit.chunk, chunk_title(titles, hit.chunk))),
                "snippet": hit.chunk.text[:300],
                "score": round(hit.score, 6),
            }
            for hit in hits
        ],
    }


def _without_text(evidence: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in evidence.items() if name != "text"}


@bp.get("/<notebook_id>/evidence/<chunk_id>")
def evidence_for(notebook_id: str, chunk_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    revision_id = request.args.get("revision")
    if not revision_id:
        raise ApiError(400, "REVISION_REQUIRED", "Pass the citation's revision as 'revision'.")
    return pinned_evidence(principal, CiteTarget(notebook_id, revision_id, chunk_id))


def pinned_evidence(principal: Principal, target: CiteTarget) -> dict[str, Any]:
    """The cited passage in its pinned revision, if the caller may see the notebook."""
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, target.notebook_id)
        if revisions.get(session, notebook, target.revision_id) is None:
            raise ApiError(404, "REVISION_NOT_FOUND", "No such revision in this notebook.")
        chunk = evidence.chunk_in_revision(session, notebook, target.revision_id, target.chunk_id)
        if chunk is None:
            raise ApiError(404, "EVIDENCE_NOT_FOUND", "No such chunk in that revision.")
        transcript = evidence.transcript_around(session, chunk) if "start" in chunk.locator else None
    title = chunk_title(record_titles(services(), notebook.table_id), chunk)
    shown = evidence_json(target.notebook_id, chunk, title)
    if transcript is not None:
        recording = (chunk.source_mime or "").startswith(("audio/", "video/"))  # not a subtitles file
        playable = chunk.source_kind in FILE_KINDS and recording
        shown["media"] = {"mime": chunk.source_mime, "playable": playable, "transcript": transcript}
        if chunk.source_kind == "url":  # not kept here: it plays on its own site
            shown["media"]["original_url"] = moment_url(chunk.source_final_url or chunk.source_value, TIME_PLACEHOLDER)
    return shown
