"""Resolve a gnosi-cite link (or a link an earlier version stored) to its authorized evidence."""
from __future__ import annotations

from flask import Blueprint, request

from app.api.search import pinned_evidence
from app.auth import current_principal
from app.errors import ApiError
from pipeline.citation_links import parse_link

bp = Blueprint("citations", __name__, url_prefix="/api/citations")
MAX_LINK_CHARS = 1000


@bp.get("/resolve")
def resolve():  # type: ignore[no-untyped-def]
    """``?link=gnosi-cite://<notebook>/<revision>/<chunk>``: the passage in its pinned revision,
    with where to open it (``open_url``), under the same authorization as the evidence route."""
    principal = current_principal()
    link = request.args.get("link", "")
    target = parse_link(link) if len(link) <= MAX_LINK_CHARS else None
    if target is None:
        raise ApiError(
            400, "CITATION_LINK_INVALID",
            "'link' must be a gnosi-cite://<notebook>/<revision>/<chunk> link or an evidence link.", field="link",
        )
    return pinned_evidence(principal, target)
