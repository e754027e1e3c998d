"""GET /api/notebooks/resources: the References catalogue as a selector."""
from __future__ import annotations

from flask import Blueprint, request

from app.api.access import visible_notebook
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import paging
from storage import notebooks

bp = Blueprint("resources", __name__, url_prefix="/api/notebooks")


def references_table_id() -> str:
    table_id = services().settings.references_table_id
    if not table_id:
        raise ApiError(
            409, "REFERENCES_TABLE_NOT_CONFIGURED", "Set GNOSI_REFERENCES_TABLE to a table id of the vault."
        )
    return table_id


@bp.get("/resources")
def list_resources():  # type: ignore[no-untyped-def]
    """With ``notebook_id`` (a notebook the caller may see), each item also says whether it is
    already a member (``member``), for the "add sources" dialog."""
    principal = current_principal()
    page = paging()
    svc = services()
    selection = svc.catalogue.select(
        references_table_id(),
        q=request.args.get("q") or None,
        type=request.args.get("type") or None,
        author=request.args.get("author") or None,
        tag=request.args.get("tag") or None,
        page=page.page,
        per_page=page.per_page,
    )
    listed = selection.to_dict()
    notebook_id = request.args.get("notebook_id")
    if notebook_id:
        with svc.db.reader() as session:
            members = set(notebooks.member_ids(session, visible_notebook(session, principal, notebook_id)))
        for item in listed["items"]:
            item["member"] = item["resource_id"] in members
    return listed
