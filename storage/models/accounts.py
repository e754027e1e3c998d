"""Workspaces, users, their memberships, API tokens, sign-in sessions and throttles."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


class Workspace(Base):
    __tablename__ = "workspaces"
    __table_args__ = (UniqueConstraint("vault_hash", "name"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    vault_hash: Mapped[str] = mapped_column(String(32), index=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class User(Base):
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("vault_hash", "name"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    vault_hash: Mapped[str] = mapped_column(String(32), index=True)
    name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str | None] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Membership(Scoped, Base):
    __tablename__ = "memberships"
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    role: Mapped[str] = mapped_column(String(20))


class ApiToken(Scoped, Base):
    __tablename__ = "api_tokens"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class SignInSession(Scoped, Base):
    """A dashboard sign-in, held by an HttpOnly cookie: its own record, never a bearer token.

    ``origin_token_id`` names the API token a session was opened with (None for a password
    sign-in), so revoking that token ends every session it opened.
    """

    __tablename__ = "sign_in_sessions"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    origin_token_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class RateLimit(Base):
    """One row per limited key: its theoretical arrival time (GCRA), shared by every process."""

    __tablename__ = "rate_limits"
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    tat: Mapped[float] = mapped_column(Float)


class SignInFailure(Base):
    """Consecutive failed sign-ins per account or address, and until when the next is refused."""

    __tablename__ = "sign_in_failures"
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(DateTime)
    last_failure_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
