"""The dashboard: HTML shells for each screen and the static files they load from web/.

Pages carry no data and no inline script: each shell names its ES module and passes ids through
``data-*`` attributes, and the module reads everything through the same /api routes as any other
client (so the dashboard can do nothing the REST API cannot). A browser without a session cookie
is sent to the sign-in page first, so no shell flashes before a redirect.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from flask import Blueprint, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response

from app.auth import SESSION_SECRET

WEB = Path(__file__).resolve().parents[1] / "web"

bp = Blueprint(
    "dashboard",
    __name__,
    template_folder=str(WEB / "templates"),
    static_folder=str(WEB / "static"),
    static_url_path="/static",
)


def _page(template: str, **context: str) -> str | Response:
    if not session.get(SESSION_SECRET):
        return redirect(url_for("dashboard.sign_in", next=request.full_path.rstrip("?")))
    return render_template(template, **context)


def _safe_next(target: str | None) -> str:
    """Only a local path: a crafted ?next= must never send a signed-in user to another site.

    Browsers read a backslash as a slash (``/\\evil.example`` is ``//evil.example``) and drop tabs
    and newlines inside URLs, so any of those refuse the target outright.
    """
    if (
        not target
        or not target.startswith("/")
        or target.startswith("//")
        or any(c == "\\" or ord(c) < 0x20 or ord(c) == 0x7F for c in target)
        or urlsplit(target).netloc
    ):
        return url_for("dashboard.library")
    return target


@bp.get("/")
def home() -> Response:
    return redirect(url_for("dashboard.library"))


@bp.get("/sign-in")
def sign_in() -> str:
    return render_template("sign_in.html", next_url=_safe_next(request.args.get("next")))


@bp.get("/notebooks")
def library() -> str | Response:
    return _page("library.html")


@bp.get("/notebooks/<notebook_id>")
def notebook(notebook_id: str) -> str | Response:
    return _page("notebook.html", notebook_id=notebook_id)


@bp.get("/notebooks/<notebook_id>/evidence/<chunk_id>")
def evidence(notebook_id: str, chunk_id: str) -> str | Response:
    """A citation as its own page (a citation link opened in a new tab lands here)."""
    return _page(
        "evidence.html", notebook_id=notebook_id, chunk_id=chunk_id, revision_id=request.args.get("revision", "")
    )


@bp.get("/tables/<table_id>")
def table(table_id: str) -> str | Response:
    return _page("table.html", table_id=table_id)
