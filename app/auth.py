"""Who is calling: a bearer token (API clients) or a signed session cookie (the dashboard).

Both resolve through the same token table, so revoking a token or signing out takes effect on the
next request. Cookie-authenticated requests that change state must carry ``X-CSRF-Token`` (a MAC
of the session's token), which a page on another origin cannot read or forge.
"""
from __future__ import annotations

import hashlib
import hmac

from flask import current_app, g, request, session

from app.errors import ApiError
from storage import accounts
from storage.scope import Principal

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
SESSION_TOKEN = "token"


def csrf_token_for(token: str) -> str:
    key = current_app.extensions["gnosi"].settings.session_key().encode()
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()[:40]


def current_principal() -> Principal:
    principal = g.get("principal")
    if principal is not None:
        return principal
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        g.principal = principal_from_token(token.strip())
        return g.principal
    cookie_token = session.get(SESSION_TOKEN)
    if not cookie_token:
        raise ApiError(401, "AUTH_REQUIRED", "Sign in, or send 'Authorization: Bearer <token>'.")
    if request.method not in SAFE_METHODS and not hmac.compare_digest(
        request.headers.get("X-CSRF-Token", ""), csrf_token_for(cookie_token)
    ):
        raise ApiError(403, "CSRF_FAILED", "Send the X-CSRF-Token header given at sign-in.")
    g.principal = principal_from_token(cookie_token)
    return g.principal


def principal_from_token(token: str) -> Principal:
    services = current_app.extensions["gnosi"]
    with services.db.reader() as db_session:
        principal = accounts.principal_for_token(db_session, services.settings.vault_hash, token)
    if principal is None:
        raise ApiError(401, "AUTH_INVALID", "The token is unknown or revoked.")
    return principal
