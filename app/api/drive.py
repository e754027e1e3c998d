"""The caller's Google Drive authorisation (docs/decisions/0020): stored encrypted, replaced or
removed here, never returned (the API says only whether it works)."""
from __future__ import annotations

from flask import Blueprint

from app.auth import current_principal
from app.extensions import services
from app.http import json_object, refuse_unknown_fields, string_field
from app.services.drive_connectors import authorization_state, store_authorization
from storage.models import DriveAuthorization

bp = Blueprint("drive", __name__, url_prefix="/api/drive")
FIELDS = ("client_id", "client_secret", "refresh_token")


@bp.get("/authorization")
def authorization():  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.reader() as session:
        return authorization_state(services(), session, principal.user_id)


@bp.put("/authorization")
def authorize():  # type: ignore[no-untyped-def]
    """Store the caller's authorisation: the OAuth client it was granted to and the refresh token
    Google gave (a new one replaces the old, and clears a refusal)."""
    principal = current_principal()
    body = json_object()
    refuse_unknown_fields(body, FIELDS)
    values = {name: string_field(body, name, required=True, max_len=2000) or "" for name in FIELDS}
    svc = services()
    with svc.db.session() as session:
        store_authorization(svc, session, user_id=principal.user_id, vault_hash=principal.scope.vault_hash, **values)
        return authorization_state(svc, session, principal.user_id)


@bp.delete("/authorization")
def forget():  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.session() as session:
        row = session.get(DriveAuthorization, principal.user_id)
        if row is not None:
            session.delete(row)
    return "", 204
