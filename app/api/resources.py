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
    """Without ``notebook_id``: the configured References table, for creating a notebook. With
    it (a notebook the caller may see), for its "add sources" dialog: the table that notebook was
    created from, whatever is configured now (``table_changed`` says when they differ), each item
    saying whether it is already a member (``member``)."""
    principal = current_principal()
    page = paging()
    svc = services()
    notebook_id = request.args.get("notebook_id")
    members: set[str] | None = None
    if notebook_id:
        with svc.db.reader() as session:
            notebook = visible_notebook(session, principal, notebook_id)
            members = set(notebooks.member_ids(session, notebook))
            table_id = notebook.table_id
    else:
        table_id = references_table_id()
    selection = svc.catalogue.select(
        table_id,
        q=request.args.get("q") or None,
        type=request.args.get("type") or None,
        author=request.args.get("author") or None,
        tag=request.args.get("tag") or None,
        page=page.page,
        per_page=page.per_page,
    )
    listed = {**selection.to_dict(), "table_id": table_id, "table_changed": table_id != svc.settings.references_table_id}
    if members is not None:
        for item in listed["items"]:
            item["member"] = item["resource_id"] in members
    return listed
