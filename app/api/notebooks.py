"""Notebook library, creation, detail, settings, deletion and refresh."""
from __future__ import annotations

from flask import Blueprint, request

from app.api.access import owned_notebook, visible_notebook
from app.api.resources import references_table_id
from app.api.views import job_json, notebook_json
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import Services, services
from app.http import choice_field, json_object, paging, refuse_unknown_fields, string_field, string_list
from app.services.ingest import request_ingest
from pipeline.catalogue import MAX_RESOURCES_PER_REQUEST
from storage import jobs, notebooks
from storage.models import Notebook, Revision
from storage.notebooks import CONVERSATION_MODES, VISIBILITIES
from storage.scope import Principal

bp = Blueprint("notebooks", __name__, url_prefix="/api/notebooks")


def _detail(  # type: ignore[no-untyped-def]
    session, notebook: Notebook, principal: Principal, owned: bool | None = None
) -> dict:
    """``owned``: whether the ACL makes the caller an owner, when the caller already knows."""
    revision = session.get(Revision, notebook.active_revision_id) if notebook.active_revision_id else None
    return notebook_json(
        notebook,
        revision=revision,
        job=jobs.active_job(session, notebook) or jobs.latest_job(session, notebook),
        resource_count=len(notebooks.member_ids(session, notebook)),
        failing_count=notebooks.failing_count(session, notebook, revision) if revision else 0,
        is_owner=notebooks.is_owner(session, principal, notebook) if owned is None else owned,
    )


@bp.get("")
def library():  # type: ignore[no-untyped-def]
    principal = current_principal()
    page = paging(default_per_page=50, max_per_page=200)
    with services().db.reader() as session:
        found = notebooks.list_visible(
            session, principal, q=request.args.get("q") or None, page=page.page, per_page=page.per_page
        )
        owned = notebooks.owned_ids(session, principal, [nb.id for nb in found.items])
        items = [_detail(session, nb, principal, nb.id in owned) for nb in found.items]
    return page.shown(items, found.total)


@bp.post("")
def create():  # type: ignore[no-untyped-def]
    principal = current_principal()
    body = json_object()
    if not principal.can_write:
        raise ApiError(403, "ROLE_FORBIDDEN", "Viewers cannot create notebooks.")
    refuse_unknown_fields(body, ("title", "visibility", "conversation_mode", "resource_ids"))
    title = string_field(body, "title", required=True)
    visibility = choice_field(body, "visibility", VISIBILITIES, "private")
    mode = choice_field(body, "conversation_mode", CONVERSATION_MODES, "private")
    resource_ids = string_list(
        body, "resource_ids", max_items=MAX_RESOURCES_PER_REQUEST, required=True
    )
    svc = services()
    table_id = references_table_id()
    svc.catalogue.validate(table_id, resource_ids)
    with svc.db.session() as session:
        notebook = notebooks.create(
            session, principal, title=title, visibility=visibility, conversation_mode=mode,
            table_id=table_id, resource_ids=resource_ids,
        )
    outcome, _ = request_ingest(svc, notebook.id, requested_by=principal.user_id)
    with svc.db.reader() as session:
        detail = _detail(session, visible_notebook(session, principal, notebook.id), principal)
    return {**detail, "ingest": outcome}, 201


@bp.get("/<notebook_id>")
def detail(notebook_id: str):  # type: ignore[no-untyped-def]
    """``?open=1`` marks the user opening the notebook: sources are compared with the active
    revision and a refresh is queued only if something changed (plain polling never triggers).
    ``ingest`` says what the opening decided, as creating and refreshing do (null: not asked)."""
    principal = current_principal()
    svc = services()
    with svc.db.reader() as session:
        visible_notebook(session, principal, notebook_id)
    outcome = None
    if request.args.get("open") == "1":
        outcome = _open(svc, principal.user_id, notebook_id)
    with svc.db.reader() as session:
        body = _detail(session, visible_notebook(session, principal, notebook_id), principal)
    return {**body, "ingest": outcome}


def _open(svc: Services, user_id: str, notebook_id: str) -> str:
    """The change check of an opening, at most GNOSI_OPENS_PER_MINUTE per user and notebook:
    over the limit the notebook is still shown, unchecked (``"ingest": "rate_limited"``)."""
    if svc.limiter.wait("open", user_id, notebook_id):
        return "rate_limited"
    outcome, _ = request_ingest(svc, notebook_id, requested_by=user_id, only_if_changed=True)
    return outcome


@bp.patch("/<notebook_id>")
def update(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("title", "visibility", "conversation_mode"))
    changes = {
        name: value
        for name, value in (
            ("title", string_field(body, "title", required=False)),
            ("visibility", choice_field(body, "visibility", VISIBILITIES, None)),
            ("conversation_mode", choice_field(body, "conversation_mode", CONVERSATION_MODES, None)),
        )
        if value is not None
    }
    with services().db.session() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        notebooks.update_settings(notebook, changes)
        return _detail(session, notebook, principal)


@bp.delete("/<notebook_id>")
def delete(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    svc = services()
    with svc.db.session() as session:
        released = notebooks.delete_notebook(session, owned_notebook(session, principal, notebook_id))
    svc.release(released)
    return "", 204


@bp.post("/<notebook_id>/refresh")
def refresh(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    svc = services()
    with svc.db.reader() as session:
        owned_notebook(session, principal, notebook_id)
    svc.limiter.hit("refresh", principal.user_id)
    outcome, job = request_ingest(
        svc, notebook_id, requested_by=principal.user_id, only_if_changed=True, explicit=True
    )
    return {"ingest": outcome, "job": job_json(job)}, 202


@bp.post("/<notebook_id>/refresh/cancel")
def cancel(notebook_id: str):  # type: ignore[no-untyped-def]
    """Cooperative: workers see ``cancelling`` before each source and before activation."""
    principal = current_principal()
    with services().db.session() as session:
        job = jobs.request_cancel(session, owned_notebook(session, principal, notebook_id))
        if job is None:
            raise ApiError(409, "NO_ACTIVE_JOB", "No ingestion is running for this notebook.")
        return {"job": job_json(job)}, 202
