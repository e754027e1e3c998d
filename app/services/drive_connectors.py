"""The connector a linked folder is read with, and the Google Drive authorisations behind it
(docs/decisions/0020).

A Drive folder is read as the user who linked it (its "document owner"): with the operator's
service account when GNOSI_DRIVE_SERVICE_ACCOUNT_FILE names one (a reference to a key file the
operator provides: never stored), else with the owner's own authorisation, stored encrypted
(pipeline.connectors.secrets) and never returned by the API. A refresh that Google refuses marks
the stored authorisation revoked, so the next "sync now" says DRIVE_NOT_AUTHORIZED at once.
"""
from __future__ import annotations

import json
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from app.extensions import Services
from app.timestamps import iso
from pipeline.connectors.base import DRIVE_NOT_AUTHORIZED, Connector
from pipeline.connectors.folder import FolderConnector
from pipeline.connectors.google_drive import GoogleDriveConnector, ServiceAccount, UserAuthorization
from pipeline.connectors.secrets import decrypt_authorization, encrypt_authorization
from pipeline.types import PipelineError
from storage.models import DriveAuthorization, utcnow

GOOGLE_DRIVE, FOLDER = "google-drive", "folder"
SUPPORTED = (GOOGLE_DRIVE, FOLDER)


def connector_for(svc: Services, name: str, owner_id: str) -> Connector:
    """The connector that reads ``owner_id``'s folders of drive ``name``; ``DRIVE_NOT_AUTHORIZED``
    when a Drive owner has no valid authorisation."""
    settings = svc.settings
    if name == FOLDER:
        return FolderConnector(settings.sync_folder_roots)
    if name != GOOGLE_DRIVE:
        raise PipelineError("CONNECTOR_UNSUPPORTED", f"Unsupported source: {name}. Supported: {', '.join(SUPPORTED)}")
    urls = {"api_url": settings.drive_api_url, "token_url": settings.drive_token_url}
    if settings.drive_service_account_file is not None:
        return GoogleDriveConnector(_service_account(settings.drive_service_account_file), **urls)
    with svc.db.reader() as session:
        stored = _stored(svc, session, owner_id)
    keep = partial(_keep_token, svc, owner_id, stored.refresh_token if stored else "")
    return GoogleDriveConnector(stored, on_token=keep, **urls)


def _service_account(path: Any) -> ServiceAccount:
    try:
        return ServiceAccount(json.loads(path.read_text()))
    except (OSError, ValueError):
        raise PipelineError(
            DRIVE_NOT_AUTHORIZED, "The service account key that GNOSI_DRIVE_SERVICE_ACCOUNT_FILE names cannot be read."
        ) from None


def _stored(svc: Services, session: Session, owner_id: str) -> UserAuthorization | None:
    row = session.get(DriveAuthorization, owner_id)
    if row is None or row.revoked_at is not None:
        return None
    fields = decrypt_authorization(svc.settings.session_key(), row.sealed)
    return UserAuthorization(
        fields["client_id"], fields["client_secret"], fields["refresh_token"], fields.get("access_token"),
        fields.get("expires_at"),
    )


def note_refused(svc: Services, owner_id: str, read_before: datetime) -> None:
    """Google refused the owner's authorisation (revoked or expired), or it cannot be read: keep
    it, marked, until the owner authorises again. Only the one a connector made at
    ``read_before`` used: an authorisation stored since is the owner's new one, not the refused."""
    if svc.settings.drive_service_account_file is not None:
        return
    with svc.db.session() as session:
        row = session.get(DriveAuthorization, owner_id)
        if row is not None and row.revoked_at is None and row.updated_at <= read_before:
            row.revoked_at = utcnow()


def _keep_token(svc: Services, owner_id: str, refresh_token: str, token: dict[str, Any]) -> None:
    """Store the new access token, so the next round does not ask Google for one again; never
    into an authorisation the owner replaced meanwhile (another refresh token)."""
    with svc.db.session() as session:
        row = session.get(DriveAuthorization, owner_id)
        if row is None:
            return
        key = svc.settings.session_key()
        fields = decrypt_authorization(key, row.sealed)
        if fields.get("refresh_token") != refresh_token:
            return
        fields.update(access_token=token.get("access_token"), expires_at=token.get("expires_at"))
        if token.get("refresh_token"):
            fields["refresh_token"] = token["refresh_token"]
        row.sealed = encrypt_authorization(key, fields)


def drive_authorized(svc: Services, session: Session, owner_id: str) -> bool:
    """Whether ``owner_id``'s Drive folders can be read, as far as this instance knows without
    asking Google: a service account, or a stored authorisation Google has not refused."""
    if svc.settings.drive_service_account_file is not None:
        return True
    row = session.get(DriveAuthorization, owner_id)
    return row is not None and row.revoked_at is None


def store_authorization(
    svc: Services, session: Session, *, user_id: str, vault_hash: str, client_id: str, client_secret: str,
    refresh_token: str,
) -> None:
    sealed = encrypt_authorization(
        svc.settings.session_key(),
        {"client_id": client_id, "client_secret": client_secret, "refresh_token": refresh_token},
    )
    row = session.get(DriveAuthorization, user_id)
    if row is None:
        session.add(DriveAuthorization(user_id=user_id, vault_hash=vault_hash, sealed=sealed))
    else:
        row.sealed, row.revoked_at = sealed, None


def authorization_state(svc: Services, session: Session, user_id: str) -> dict[str, Any]:
    """What the API says of a user's authorisation: whether it works, never what it holds."""
    row = session.get(DriveAuthorization, user_id)
    return {
        "service_account": svc.settings.drive_service_account_file is not None,
        "stored": row is not None,
        "revoked_at": iso(row.revoked_at) if row is not None else None,
        "authorized": drive_authorized(svc, session, user_id),
    }

