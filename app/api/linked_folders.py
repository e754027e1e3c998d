"""A notebook's linked drive folders: link, list, change the schedule, unlink, sync now
(docs/decisions/0020). Owners manage them, as they manage sources; anyone who can read the
notebook can see them."""
from __future__ import annotations

from contextlib import closing
from typing import Any

from flask import Blueprint

from app.api.access import owned_notebook, visible_notebook
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, refuse_unknown_fields, string_field
from app.services.drive_connectors import SUPPORTED, connector_for
from app.services.ingest import request_ingest
from app.services.sync_requests import request_sync, sync_folders
from app.timestamps import iso
from pipeline.connectors.base import DRIVE_NOT_AUTHORIZED, FOLDER_NOT_ALLOWED, FOLDER_UNAVAILABLE
from pipeline.types import PipelineError
from storage import linked
from storage.models import LinkedFolder

bp = Blueprint("linked_folders", __name__, url_prefix="/api/notebooks")
MIN_SCHEDULE_SECONDS = 60
MAX_SCHEDULE_SECONDS = 30 * 24 * 3600
LINK_STATUS = {FOLDER_NOT_ALLOWED: 400, FOLDER_UNAVAILABLE: 404, DRIVE_NOT_AUTHORIZED: 403}


def folder_json(folder: LinkedFolder, documents: int) -> dict[str, Any]:
    error = {"code": folder.last_sync_error_code, "message": folder.last_sync_error or ""} if folder.last_sync_error_code else None
    return {
        "id": folder.id,
        "connector": folder.connector,
        "folder": folder.folder_id,
        "name": folder.folder_name,
        "schedule": folder.schedule_seconds if folder.schedule_seconds else "off",
        "document_count": documents,
        "last_sync_at": iso(folder.last_sync_at),
        "last_sync_outcome": folder.last_sync_outcome,
        "last_sync_error": error,
        "next_sync_at": iso(folder.next_sync_at) if folder.schedule_seconds else None,
        "created_at": iso(folder.created_at),
    }


def _schedule(body: dict[str, Any]) -> int | None:
    """``"off"`` or whole seconds between scheduled rounds (a minute to thirty days)."""
    value = body.get("schedule", "off")
    if value == "off" or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SCHEDULE_SECONDS <= value <= MAX_SCHEDULE_SECONDS:
        raise ApiError(
            400, "SCHEDULE_INVALID",
            f"'schedule' is \"off\" or the seconds between rounds, from {MIN_SCHEDULE_SECONDS} to {MAX_SCHEDULE_SECONDS}.",
            field="schedule",
        )
    return value


@bp.get("/<notebook_id>/linked-folders")
def list_folders(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        folders = linked.folders(session, [notebook.id])
        counts = linked.document_counts(session, [f.id for f in folders])
        return {"items": [folder_json(f, counts.get(f.id, 0)) for f in folders]}


@bp.post("/<notebook_id>/linked-folders")
def link_folder(notebook_id: str):  # type: ignore[no-untyped-def]
    """Link a folder: checked against the drive at once (it must exist and be readable), then its
    first round starts; its files appear among the sources as they are downloaded."""
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("connector", "folder", "schedule"))
    connector_name = body.get("connector")
    if connector_name not in SUPPORTED:
        raise ApiError(400, "CONNECTOR_UNSUPPORTED", f"'connector' must be one of: {', '.join(SUPPORTED)}.", field="connector")
    folder_id = string_field(body, "folder", required=True, max_len=1000) or ""
    schedule = _schedule(body)
    svc = services()
    with svc.db.reader() as session:
        owned_notebook(session, principal, notebook_id)
    try:
        with closing(connector_for(svc, connector_name, principal.user_id)) as connector:
            info = connector.folder(folder_id)  # the drive's own id ("root" is an alias; a path, resolved)
    except PipelineError as err:
        raise ApiError(LINK_STATUS.get(err.code, 502), err.code, err.message) from None
    with svc.db.session() as session:
        notebook = owned_notebook(session, principal, notebook_id)
        folder = linked.link(
            session, principal, notebook, connector=connector_name, folder_id=info.id, folder_name=info.name,
            schedule_seconds=schedule,
        )
        if folder is None:
            raise ApiError(409, "FOLDER_ALREADY_LINKED", "This notebook already follows that folder.")
        shown = folder_json(folder, 0)
    sync_folders(svc, principal, [shown["id"]], trigger="link", connector=connector_name)
    return shown, 201


@bp.patch("/<notebook_id>/linked-folders/<link_id>")
def change_schedule(notebook_id: str, link_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, ("schedule",))
    schedule = _schedule(body)
    with services().db.session() as session:
        folder = _folder(session, principal, notebook_id, link_id)
        linked.set_schedule(folder, schedule)
        return folder_json(folder, linked.document_counts(session, [folder.id]).get(folder.id, 0))


@bp.delete("/<notebook_id>/linked-folders/<link_id>")
def unlink_folder(notebook_id: str, link_id: str):  # type: ignore[no-untyped-def]
    """Unlink: the folder's documents leave this notebook only (other notebooks that link the
    same folder keep theirs); the next revision drops their chunks."""
    principal = current_principal()
    svc = services()
    with svc.db.session() as session:
        folder = _folder(session, principal, notebook_id, link_id)
        linked.unlink(session, folder)
    request_ingest(svc, notebook_id, requested_by=principal.user_id, only_if_changed=True, explicit=True)
    return "", 204


@bp.post("/<notebook_id>/linked-folders/sync")
def sync_now(notebook_id: str):  # type: ignore[no-untyped-def]
    """The dashboard's "Sync now": every linked folder of this notebook, whatever its drive, under
    the same rules and rate limit as ``POST /api/knowledge-base/sync``."""
    principal = current_principal()
    with services().db.reader() as session:
        owned_notebook(session, principal, notebook_id)
    services().limiter.hit("sync", principal.user_id)  # one counter per caller, every route
    return request_sync(services(), principal, "all", [notebook_id], connectors=SUPPORTED).data()


def _folder(session: Any, principal: Any, notebook_id: str, link_id: str) -> LinkedFolder:
    notebook = owned_notebook(session, principal, notebook_id)
    folder = linked.folder_of(session, notebook, link_id)
    if folder is None:
        raise ApiError(404, "LINKED_FOLDER_NOT_FOUND", "No such linked folder in this notebook.")
    return folder
