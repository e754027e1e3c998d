"""Resolve the caller of an API request from ``Authorization: Bearer <token>``."""
from __future__ import annotations

from flask import current_app, g, request

from app.errors import ApiError
from storage import accounts
from storage.scope import Principal


def current_principal() -> Principal:
    principal = g.get("principal")
    if principal is not None:
        return principal
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "AUTH_REQUIRED", "Send 'Authorization: Bearer <token>'.")
    g.principal = principal_from_token(token.strip())
    return g.principal


def principal_from_token(token: str) -> Principal:
    services = current_app.extensions["gnosi"]
    with services.db.reader() as session:
        principal = accounts.principal_for_token(session, services.settings.vault_hash, token)
    if principal is None:
        raise ApiError(401, "AUTH_INVALID", "The token is unknown or revoked.")
    return principal
