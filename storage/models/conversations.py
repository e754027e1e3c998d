"""Conversation threads, their messages, and the revisions messages answered from."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


class ConversationThread(Scoped, Base):
    """A checkpoint namespace: one per member in private mode, one per notebook in shared mode.

    Switching modes never merges threads: each mode keeps its own, and switching back finds it.
    """

    __tablename__ = "conversation_threads"
    __table_args__ = (UniqueConstraint("notebook_id", "mode", "principal"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(
        ForeignKey("notebooks.id", ondelete="CASCADE"), index=True
    )
    mode: Mapped[str] = mapped_column(String(20))
    principal: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Message(Scoped, Base):
    """An append-only transcript entry; assistant messages keep their citations verbatim."""

    __tablename__ = "messages"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversation_threads.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(String(20))
    author_id: Mapped[str | None] = mapped_column(String(32))
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str | None] = mapped_column(String(20))
    citations: Mapped[list[Any]] = mapped_column(default=list)
    # A refused answer's closest passages ("related, but they do not answer this"); else empty.
    related: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class RevisionPin(Base):
    """A revision a message answered from: retention keeps it while the message exists.

    No foreign key to revisions: a pinned revision of an attached notebook may outlive nothing
    else, and deleting that notebook must not be blocked by another notebook's transcript.
    """

    __tablename__ = "revision_pins"
    message_id: Mapped[int] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    notebook_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    revision_id: Mapped[str] = mapped_column(String(32), index=True)
