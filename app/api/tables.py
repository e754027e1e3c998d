"""The vault's tables and their records, for the dashboard's table view and bulk action."""
from __future__ import annotations

from flask import Blueprint, request

from app.auth import current_principal
from app.extensions import services
from app.http import paging
from pipeline.catalogue import EXCLUSIONS, exclusion, fold

bp = Blueprint("tables", __name__, url_prefix="/api/tables")


@bp.get("")
def list_tables():  # type: ignore[no-untyped-def]
    """``is_references`` compares identities: the bulk action never keys on a name."""
    current_principal()
    svc = services()
    references = svc.settings.references_table_id
    return {
        "items": [
            {"id": table.id, "name": table.name, "is_references": bool(references) and table.id == references}
            for table in svc.catalogue.tables()
        ]
    }


@bp.get("/<table_id>/records")
def list_records(table_id: str):  # type: ignore[no-untyped-def]
    """Every record, sorted accent-insensitively; one that cannot be chosen (a template, no usable
    attachment or URL) says why in ``excluded``."""
    current_principal()
    page = paging(default_per_page=50, max_per_page=200)
    svc = services()
    table = svc.catalogue.table(table_id)
    q = fold(request.args.get("q") or "")
    rows = []
    for record in svc.catalogue.records(table):
        if q and q not in fold(record.title):
            continue
        reason = exclusion(record, table, allowlist=svc.settings.url_allowlist)
        rows.append({
            "resource_id": record.resource_id,
            "title": record.title,
            "usable": reason is None,
            "excluded": None if reason is None else {"code": reason, "message": EXCLUSIONS[reason]},
        })
    rows.sort(key=lambda row: (fold(row["title"]), row["resource_id"]))
    return {"table": {"id": table.id, "name": table.name}, **page.shown(
        rows[page.offset : page.offset + page.per_page], len(rows), omitted=sum(1 for row in rows if not row["usable"]))}
