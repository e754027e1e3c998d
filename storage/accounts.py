"""Users, workspaces, memberships and API tokens.

Tokens are random, shown once, and stored only as a SHA-256 digest: a leaked database does not
leak credentials, and a lookup by digest is a constant-time index probe.
"""
from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import func, select
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from storage.models import ApiToken, Membership, User, Workspace, utcnow
from storage.scope import ROLES, Principal, Scope

TOKEN_PREFIX = "gn_"
_DUMMY_HASH = generate_password_hash("not-a-password")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def ensure_workspace(session: Session, vault_hash: str, name: str) -> Workspace:
    found = session.scalar(
        select(Workspace).where(Workspace.vault_hash == vault_hash, Workspace.name == name)
    )
    if found is None:
        found = Workspace(vault_hash=vault_hash, name=name)
        session.add(found)
        session.flush()
    return found


def add_user(
    session: Session, vault_hash: str, name: str, workspace_name: str, role: str
) -> tuple[User, str]:
    """Create (or reuse) a user, give them ``role`` in the workspace, return a new API token."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    workspace = ensure_workspace(session, vault_hash, workspace_name)
    user = find_user(session, vault_hash, name)
    if user is None:
        user = User(vault_hash=vault_hash, name=name)
        session.add(user)
        session.flush()
    membership = session.get(Membership, (user.id, workspace.id))
    if membership is None:
        session.add(
            Membership(vault_hash=vault_hash, workspace_id=workspace.id, user_id=user.id, role=role)
        )
    else:
        membership.role = role
    return user, issue_token(session, vault_hash, user.id, workspace.id)


def issue_token(session: Session, vault_hash: str, user_id: str, workspace_id: str) -> str:
    """A new random API credential for (user, workspace); only its digest is stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(vault_hash=vault_hash, workspace_id=workspace_id, user_id=user_id, token_hash=hash_token(token))
    )
    return token


def find_user(session: Session, vault_hash: str, name: str) -> User | None:
    return session.scalar(select(User).where(User.vault_hash == vault_hash, User.name == name))


def set_password(user: User, password: str) -> None:
    user.password_hash = generate_password_hash(password)


def check_password(
    session: Session, vault_hash: str, name: str, password: str, workspace_name: str | None
) -> Membership | None:
    """The membership a correct password signs in to (the first workspace by name unless one is
    named), or None.

    The password hash is checked even for unknown users, so timing does not reveal which
    account names exist.
    """
    user = find_user(session, vault_hash, name)
    valid = check_password_hash(user.password_hash if user and user.password_hash else _DUMMY_HASH, password)
    if user is None or not user.password_hash or not valid:
        return None
    query = select(Membership).join(Workspace, Workspace.id == Membership.workspace_id).where(
        Membership.user_id == user.id, Membership.vault_hash == vault_hash
    )
    if workspace_name:
        query = query.where(Workspace.name == workspace_name)
    memberships = session.scalars(query.order_by(Workspace.name)).all()
    return memberships[0] if memberships else None


def principal_of(session: Session, vault_hash: str, user_id: str, workspace_id: str) -> Principal | None:
    """The user acting in a workspace, with their role as it is now (None without membership)."""
    row = session.execute(
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(User.id == user_id, User.vault_hash == vault_hash, Membership.workspace_id == workspace_id)
    ).first()
    if row is None:
        return None
    user, membership = row
    return Principal(
        user_id=user.id, user_name=user.name, role=membership.role,
        scope=Scope(vault_hash=vault_hash, workspace_id=workspace_id),
    )


def live_token(session: Session, vault_hash: str, token: str) -> ApiToken | None:
    """The unrevoked API token of this vault with that secret, or None."""
    return session.scalar(
        select(ApiToken).where(
            ApiToken.token_hash == hash_token(token),
            ApiToken.vault_hash == vault_hash,
            ApiToken.revoked_at.is_(None),
        )
    )


def principal_for_token(session: Session, vault_hash: str, token: str) -> Principal | None:
    """The principal a bearer token acts as, or None if unknown, revoked or of another vault."""
    api_token = live_token(session, vault_hash, token)
    return principal_of(session, vault_hash, api_token.user_id, api_token.workspace_id) if api_token else None


def revoke_token(session: Session, vault_hash: str, token: str) -> bool:
    """Revoke an API token (and so every dashboard session opened with it: storage/sessions.py)."""
    api_token = live_token(session, vault_hash, token)
    if api_token is None:
        return False
    api_token.revoked_at = utcnow()
    return True


def count_users(session: Session, vault_hash: str) -> int:
    return session.scalar(select(func.count()).select_from(User).where(User.vault_hash == vault_hash)) or 0
