"""Dashboard sign-in: POST/GET/DELETE /api/session (a revocable sign-in session in an HttpOnly cookie)."""
from __future__ import annotations

import math

from flask import Blueprint, current_app, request, session

from app.auth import SESSION_SECRET, csrf_token_for, current_principal, principal_from_session
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, string_field
from storage import accounts, sessions, sign_in_guard
from storage.models import Workspace
from storage.scope import Principal

bp = Blueprint("session", __name__, url_prefix="/api/session")


def _describe(principal: Principal, secret: str | None) -> dict:
    with services().db.reader() as db_session:
        workspace = db_session.get(Workspace, principal.scope.workspace_id)
    described = {
        "user": {"id": principal.user_id, "name": principal.user_name, "role": principal.role},
        "workspace": {"id": principal.scope.workspace_id, "name": workspace.name if workspace else None},
    }
    return {**described, "csrf_token": csrf_token_for(secret)} if secret else described


def _throttled(guarded: list[sign_in_guard.Guarded]) -> None:
    with services().db.reader() as db_session:
        wait = sign_in_guard.locked_for(db_session, guarded)
    if wait > 0:
        retry_after = max(1, math.ceil(wait))
        raise ApiError(
            429, "SIGN_IN_THROTTLED", f"Too many failed sign-ins; try again in {retry_after} s.", retry_after=retry_after
        )


def _failed(guarded: list[sign_in_guard.Guarded], error: ApiError) -> ApiError:
    with services().db.session() as db_session:
        sign_in_guard.record_failure(db_session, guarded)
    return error


def _open_with_token(token: str) -> str:
    svc = services()
    vault_hash = svc.settings.vault_hash
    lifetime = current_app.permanent_session_lifetime
    with svc.db.session() as db_session:
        api_token = accounts.live_token(db_session, vault_hash, token)
        if api_token is None or accounts.principal_of(db_session, vault_hash, api_token.user_id, api_token.workspace_id) is None:
            return ""
        return sessions.open_session(
            db_session, vault_hash, api_token.user_id, api_token.workspace_id,
            lifetime=lifetime, origin_token_id=api_token.id,
        )


def _open_with_password(username: str, password: str, workspace: str | None) -> str:
    svc = services()
    vault_hash = svc.settings.vault_hash
    with svc.db.session() as db_session:
        membership = accounts.check_password(db_session, vault_hash, username, password, workspace)
        if membership is None:
            return ""
        sign_in_guard.record_success(db_session, sign_in_guard.account(vault_hash, username))
        return sessions.open_session(
            db_session, vault_hash, membership.user_id, membership.workspace_id,
            lifetime=current_app.permanent_session_lifetime,
        )


@bp.post("")
def sign_in():  # type: ignore[no-untyped-def]
    """``{"username", "password", "workspace"?}`` or ``{"token"}`` (an API token, e.g. on first run).

    Failed attempts back off per account and per address (storage/sign_in_guard.py): while a
    key is locked the answer is 429 with Retry-After, and the password is not even checked.
    """
    body = json_object()
    address = sign_in_guard.address(request.remote_addr or "unknown")
    if "token" in body:
        token = string_field(body, "token", required=True, max_len=200) or ""
        _throttled([address])
        secret = _open_with_token(token)
        if not secret:
            raise _failed([address], ApiError(401, "AUTH_INVALID", "The token is unknown or revoked."))
    else:
        username = string_field(body, "username", required=True, max_len=200) or ""
        password = body.get("password")
        if not isinstance(password, str) or not password:
            raise ApiError(400, "FIELD_REQUIRED", "'password' is required.", field="password")
        workspace = string_field(body, "workspace", required=False, max_len=200)
        guarded = [sign_in_guard.account(services().settings.vault_hash, username), address]
        _throttled(guarded)
        secret = _open_with_password(username, password, workspace)
        if not secret:
            raise _failed(guarded, ApiError(401, "SIGN_IN_FAILED", "Unknown user, wrong password or no such workspace."))
    session.clear()
    session[SESSION_SECRET] = secret
    session.permanent = True
    return _describe(principal_from_session(secret), secret)


@bp.get("")
def whoami():  # type: ignore[no-untyped-def]
    return _describe(current_principal(), session.get(SESSION_SECRET))


@bp.delete("")
def sign_out():  # type: ignore[no-untyped-def]
    current_principal()
    secret = session.pop(SESSION_SECRET, None)
    if secret:
        with services().db.session() as db_session:
            sessions.end_session(db_session, services().settings.vault_hash, secret)
    session.clear()
    return "", 204
