"""Who is calling: a bearer API token (API clients) or a sign-in session cookie (the dashboard).

The two credentials never stand in for each other: a bearer header is looked up among API tokens
only, the cookie among sign-in sessions only (storage/sessions.py). Both are resolved against the
database on every request (and every websocket message), so revoking a token, signing out or
changing a role takes effect at once. Cookie-authenticated requests that change state must carry
``X-CSRF-Token`` (a MAC of the session secret), which a page on another origin cannot read or forge.
"""
from __future__ import annotations

import hashlib
import hmac

from flask import current_app, g, request, session

from app.errors import ApiError
from storage import accounts, sessions
from storage.scope import Principal

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
SESSION_SECRET = "sid"


def csrf_token_for(secret: str) -> str:
    key = current_app.extensions["gnosi"].settings.session_key().encode()
    return hmac.new(key, secret.encode(), hashlib.sha256).hexdigest()[:40]


def current_principal() -> Principal:
    principal = g.get("principal")
    if principal is not None:
        return principal
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        g.principal, g.credential = principal_from_token(token.strip()), "token"
        return g.principal
    secret = session.get(SESSION_SECRET)
    if not secret:
        raise ApiError(401, "AUTH_REQUIRED", "Sign in, or send 'Authorization: Bearer <token>'.")
    if request.method not in SAFE_METHODS and not hmac.compare_digest(
        request.headers.get("X-CSRF-Token", ""), csrf_token_for(secret)
    ):
        raise ApiError(403, "CSRF_FAILED", "Send the X-CSRF-Token header given at sign-in.")
    g.principal, g.credential = principal_from_session(secret), "session"
    return g.principal


def signed_in_person() -> Principal:
    """The caller, who must be a person signed in to the dashboard (a session cookie), not an API
    token: what approves an agent's write must not be what the agent itself holds."""
    principal = current_principal()
    if g.get("credential") != "session":
        raise ApiError(403, "SIGN_IN_REQUIRED", "Approve this in the dashboard, signed in: an API token cannot approve.")
    return principal


def principal_from_token(token: str) -> Principal:
    """The principal of an API token, or 401 (a session secret is not an API token)."""
    services = current_app.extensions["gnosi"]
    with services.db.reader() as db_session:
        principal = accounts.principal_for_token(db_session, services.settings.vault_hash, token)
    if principal is None:
        raise ApiError(401, "AUTH_INVALID", "The token is unknown or revoked.")
    return principal


def principal_from_session(secret: str) -> Principal:
    services = current_app.extensions["gnosi"]
    with services.db.reader() as db_session:
        principal = sessions.principal_for_session(db_session, services.settings.vault_hash, str(secret))
    if principal is None:
        raise ApiError(401, "SESSION_ENDED", "Your session ended (signed out, revoked or expired); sign in again.")
    return principal
