"""Durable hierarchical analyses of a notebook: start, list, read, cancel, delete (issue #16).

Access as chat's: starting one is a conversation-level action (editors and admins, not viewers),
pinned to the active revision with the chosen sources validated as a chat turn's are. Whoever may
read the notebook reads its analyses, as a shared transcript; in private conversation mode each
member sees their own (and owners all). Who started one, or an owner, may cancel or delete it, if
they may still write.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from app.api.access import visible_notebook
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import choice_field, json_object, paging, refuse_unknown_fields, string_field
from app.services.analysis_view import analysis_json
from app.services.chat_request import MAX_SOURCE_IDS, id_list, pinned_revision, selected_sources
from pipeline.analysis.types import KINDS, Focus
from storage import analyses, notebooks
from storage.models import Analysis, Notebook
from storage.scope import Principal
from tasks.analysis import start_analysis

bp = Blueprint("analyses", __name__, url_prefix="/api/notebooks")

MAX_INSTRUCTION_CHARS = 2000
# Analyses of one notebook running at once: each holds worker time for minutes.
MAX_ACTIVE = 3


@bp.post("/<notebook_id>/analyses")
def start(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("kind", "instruction", "source_ids"))
    kind = choice_field(body, "kind", KINDS, "summary") or "summary"
    instruction = string_field(body, "instruction", required=False, max_len=MAX_INSTRUCTION_CHARS) or ""
    source_ids = id_list(body, "source_ids", MAX_SOURCE_IDS)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        if not principal.can_write:
            raise ApiError(403, "READ_ONLY", "Viewers can read analyses but not start one.")
        revision = pinned_revision(session, notebook, page=True)
        selected_sources(session, notebook, revision, source_ids)
        if analyses.active_count(session, notebook) >= MAX_ACTIVE:
            raise ApiError(409, "TOO_MANY_ANALYSES", f"At most {MAX_ACTIVE} analyses of a notebook run at once.")
        analysis = analyses.start(
            session, notebook, requested_by=principal.user_id, focus=Focus(kind, instruction),
            source_ids=source_ids, engine=services().analysis_engine_name,
        )
        shown = analysis_json(services(), session, notebook, analysis)
    start_analysis(shown["id"])
    return shown, 202


@bp.get("/<notebook_id>/analyses")
def listed(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    page = paging(default_per_page=20, max_per_page=100)
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        mine = _only_own(session, principal, notebook)
        found = analyses.of_notebook(session, notebook, limit=page.per_page, offset=(page.page - 1) * page.per_page, by=mine)
        items = [analysis_json(services(), session, notebook, analysis, with_result=False) for analysis in found]
        total = analyses.count(session, notebook, by=mine)
    return {"items": items, "page": page.page, "per_page": page.per_page, "total": total}


@bp.get("/<notebook_id>/analyses/<analysis_id>")
def read(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        return analysis_json(services(), session, notebook, _found(session, principal, notebook, analysis_id))


@bp.post("/<notebook_id>/analyses/<analysis_id>/cancel")
def cancel(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        analysis = _managed(session, principal, notebook, analysis_id)
        analyses.request_cancel(analysis)
        return analysis_json(services(), session, notebook, analysis)


@bp.delete("/<notebook_id>/analyses/<analysis_id>")
def delete(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    """Its steps still in flight find it gone and stop."""
    principal = current_principal()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        session.delete(_managed(session, principal, notebook, analysis_id))
    return "", 204


def _only_own(session: Any, principal: Principal, notebook: Notebook) -> str | None:
    """The user whose analyses alone the caller sees (private conversation mode, not an owner)."""
    if notebook.conversation_mode == "private" and not notebooks.is_owner(session, principal, notebook):
        return principal.user_id
    return None


def _found(session: Any, principal: Principal, notebook: Notebook, analysis_id: str) -> Analysis:
    """The analysis if the caller may see it; otherwise 404, as an unknown one."""
    analysis = analyses.get(session, notebook, analysis_id)
    mine = _only_own(session, principal, notebook)
    if analysis is None or (mine is not None and analysis.requested_by != mine):
        raise ApiError(404, "ANALYSIS_NOT_FOUND", "No such analysis in this notebook.")
    return analysis


def _managed(session: Any, principal: Principal, notebook: Notebook, analysis_id: str) -> Analysis:
    """The analysis if the caller may still write and started it or owns the notebook."""
    analysis = _found(session, principal, notebook, analysis_id)
    if not principal.can_write:
        raise ApiError(403, "READ_ONLY", "Viewers can read analyses but not cancel or delete one.")
    if analysis.requested_by != principal.user_id and not notebooks.is_owner(session, principal, notebook):
        raise ApiError(403, "NOT_ANALYSIS_OWNER", "Only who started the analysis or the notebook's creator can do this.")
    return analysis
