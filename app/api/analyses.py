"""Durable hierarchical analyses of a notebook: start, list, read, cancel, delete (issue #16).

Who may do which is ``app.services.analysis_access`` (the chat's tools keep the same rules).
"""
from __future__ import annotations

from flask import Blueprint

from app.api.access import visible_notebook
from app.auth import current_principal
from app.extensions import services
from app.http import choice_field, json_object, paging, refuse_unknown_fields, string_field
from app.services import analysis_access
from app.services.analysis_view import analysis_json
from app.services.chat_request import MAX_SOURCE_IDS, id_list
from pipeline.analysis.types import KINDS, MAX_INSTRUCTION_CHARS, Focus
from storage import analyses, notebooks
from tasks.analysis import start_analysis

bp = Blueprint("analyses", __name__, url_prefix="/api/notebooks")


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
        analysis = analysis_access.begin(services(), session, principal, notebook, Focus(kind, instruction), source_ids)
        shown = analysis_json(services(), session, notebook, analysis, can_manage=True)
    start_analysis(shown["id"])
    return shown, 202


@bp.get("/<notebook_id>/analyses")
def listed(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    page = paging(default_per_page=20, max_per_page=100)
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        mine = analysis_access.only_own(session, principal, notebook)
        owner = notebooks.is_owner(session, principal, notebook)
        found = analyses.of_notebook(session, notebook, limit=page.per_page, offset=page.offset, by=mine)
        items = [
            analysis_json(services(), session, notebook, analysis, with_result=False,
                          can_manage=analysis_access.may_manage(principal, analysis, owner=owner))
            for analysis in found
        ]
        total = analyses.count(session, notebook, by=mine)
    return page.shown(items, total, can_start=principal.can_write)


@bp.get("/<notebook_id>/analyses/<analysis_id>")
def read(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        analysis = analysis_access.visible(session, principal, notebook, analysis_id)
        owner = notebooks.is_owner(session, principal, notebook)
        return analysis_json(services(), session, notebook, analysis,
                             can_manage=analysis_access.may_manage(principal, analysis, owner=owner))


@bp.post("/<notebook_id>/analyses/<analysis_id>/cancel")
def cancel(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        analysis = analysis_access.managed(session, principal, notebook, analysis_id)
        analyses.request_cancel(analysis)
        return analysis_json(services(), session, notebook, analysis, can_manage=True)


@bp.delete("/<notebook_id>/analyses/<analysis_id>")
def delete(notebook_id: str, analysis_id: str):  # type: ignore[no-untyped-def]
    """Its steps still in flight find it gone and stop."""
    principal = current_principal()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        session.delete(analysis_access.managed(session, principal, notebook, analysis_id))
    return "", 204
