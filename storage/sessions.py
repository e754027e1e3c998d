"""Dashboard sign-in sessions: records of their own, resolved on every request and message.

The cookie holds a random secret whose digest is stored here. It is never accepted as a bearer
token, and an API token is never accepted as a cookie, so a leaked cookie cannot drive the API
from elsewhere. Every lookup reads the membership as it is now: a revoked session, a revoked
origin token or a changed role applies to the next request or websocket message of every
session of that user.
"""
from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from storage.accounts import hash_token, principal_of
from storage.models import ApiToken, SignInSession, utcnow
from storage.scope import Principal

SESSION_PREFIX = "gs_"


def open_session(
    session: Session,
    vault_hash: str,
    user_id: str,
    workspace_id: str,
    *,
    lifetime: timedelta,
    origin_token_id: str | None = None,
) -> str:
    """A new session for (user, workspace); returns its secret (only the digest is stored)."""
    secret = SESSION_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        SignInSession(
            vault_hash=vault_hash, workspace_id=workspace_id, user_id=user_id, secret_hash=hash_token(secret),
            origin_token_id=origin_token_id, created_at=now, expires_at=now + lifetime,
        )
    )
    return secret


def _live(session: Session, vault_hash: str, secret: str) -> SignInSession | None:
    """An open session; one opened with an API token lives only as long as that token."""
    return session.scalar(
        select(SignInSession)
        .outerjoin(ApiToken, ApiToken.id == SignInSession.origin_token_id)
        .where(
            SignInSession.secret_hash == hash_token(secret),
            SignInSession.vault_hash == vault_hash,
            SignInSession.revoked_at.is_(None),
            SignInSession.expires_at > utcnow(),
            ApiToken.revoked_at.is_(None),
        )
    )


def principal_for_session(session: Session, vault_hash: str, secret: str) -> Principal | None:
    """Who a session acts as now, or None when it is unknown, ended, expired or lost its membership."""
    found = _live(session, vault_hash, secret)
    return principal_of(session, vault_hash, found.user_id, found.workspace_id) if found else None


def end_session(session: Session, vault_hash: str, secret: str) -> bool:
    found = _live(session, vault_hash, secret)
    if found is None:
        return False
    found.revoked_at = utcnow()
    return True


def end_sessions_of(session: Session, vault_hash: str, user_id: str) -> int:
    """Sign a user out everywhere; returns how many sessions ended."""
    return session.execute(
        update(SignInSession)
        .where(
            SignInSession.vault_hash == vault_hash,
            SignInSession.user_id == user_id,
            SignInSession.revoked_at.is_(None),
        )
        .values(revoked_at=utcnow())
    ).rowcount
