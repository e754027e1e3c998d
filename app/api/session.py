"""Dashboard sign-in: POST/GET/DELETE /api/session (a revocable token in an HttpOnly cookie)."""
from __future__ import annotations

from flask import Blueprint, session

from app.auth import SESSION_TOKEN, csrf_token_for, current_principal, principal_from_token
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, string_field
from storage import accounts
from storage.models import Workspace
from storage.scope import Principal

bp = Blueprint("session", __name__, url_prefix="/api/session")


def _describe(principal: Principal, token: str) -> dict:
    with services().db.reader() as db_session:
        workspace = db_session.get(Workspace, principal.scope.workspace_id)
    return {
        "user": {"id": principal.user_id, "name": principal.user_name, "role": principal.role},
        "workspace": {"id": principal.scope.workspace_id, "name": workspace.name if workspace else None},
        "csrf_token": csrf_token_for(token),
    }


@bp.post("")
def sign_in():  # type: ignore[no-untyped-def]
    """``{"username", "password", "workspace"?}`` or ``{"token"}`` (an API token, e.g. on first run)."""
    body = json_object()
    svc = services()
    vault_hash = svc.settings.vault_hash
    with svc.db.session() as db_session:
        if "token" in body:
            principal = principal_from_token(string_field(body, "token", required=True, max_len=200) or "")
            token = accounts.issue_token(
                db_session, vault_hash, principal.user_id, principal.scope.workspace_id, kind="session"
            )
        else:
            username = string_field(body, "username", required=True, max_len=200) or ""
            password = body.get("password")
            if not isinstance(password, str) or not password:
                raise ApiError(400, "FIELD_REQUIRED", "'password' is required.", field="password")
            workspace = string_field(body, "workspace", required=False, max_len=200)
            token = accounts.sign_in(db_session, vault_hash, username, password, workspace)
            if token is None:
                raise ApiError(401, "SIGN_IN_FAILED", "Unknown user, wrong password or no such workspace.")
    session.clear()
    session[SESSION_TOKEN] = token
    session.permanent = True
    return _describe(principal_from_token(token), token)


@bp.get("")
def whoami():  # type: ignore[no-untyped-def]
    principal = current_principal()
    token = session.get(SESSION_TOKEN)
    if not token:
        return {"user": {"id": principal.user_id, "name": principal.user_name, "role": principal.role}}
    return _describe(principal, token)


@bp.delete("")
def sign_out():  # type: ignore[no-untyped-def]
    current_principal()
    token = session.pop(SESSION_TOKEN, None)
    if token:
        with services().db.session() as db_session:
            accounts.revoke_token(db_session, services().settings.vault_hash, token)
    session.clear()
    return "", 204


