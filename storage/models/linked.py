"""Folders of external drives linked to notebooks, the documents found in them, sync rounds,
and the stored drive authorisations (docs/decisions/0020)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


class LinkedFolder(Scoped, Base):
    """A folder a notebook follows. ``folder_id`` is the connector's id for it (a Drive folder
    id, or an absolute path under the operator's roots)."""

    __tablename__ = "linked_folders"
    __table_args__ = (UniqueConstraint("notebook_id", "connector", "folder_id"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"), index=True)
    connector: Mapped[str] = mapped_column(String(40))
    folder_id: Mapped[str] = mapped_column(Text)
    folder_name: Mapped[str] = mapped_column(String(500))
    # Seconds between scheduled rounds; None: only "sync now" updates it.
    schedule_seconds: Mapped[int | None] = mapped_column(Integer)
    linked_by: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    next_sync_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    last_sync_at: Mapped[datetime | None] = mapped_column(DateTime)
    # ok | failed | skipped (the folder could not be read: its documents were kept)
    last_sync_outcome: Mapped[str | None] = mapped_column(String(20))
    last_sync_error_code: Mapped[str | None] = mapped_column(String(60))
    last_sync_error: Mapped[str | None] = mapped_column(String(500))


class LinkedDocument(Scoped, Base):
    """A file of a linked folder, as the notebook knows it: a member ``linked:<id>`` whose one
    source reads the bytes the last sync downloaded (the blob named ``content_hash``). One row per
    folder and file, whatever number of rounds run at once."""

    __tablename__ = "linked_documents"
    __table_args__ = (UniqueConstraint("linked_folder_id", "file_id"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    linked_folder_id: Mapped[str] = mapped_column(ForeignKey("linked_folders.id", ondelete="CASCADE"))
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"), index=True)
    file_id: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(String(500))
    mime: Mapped[str | None] = mapped_column(String(200))
    size: Mapped[int | None] = mapped_column(Integer)
    # The drive's modified time of the bytes held (None until a download succeeded).
    modified_time: Mapped[datetime | None] = mapped_column(DateTime)
    content_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    # Why the last download failed, kept until the file changes or a retry succeeds.
    error_code: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    synced_at: Mapped[datetime | None] = mapped_column(DateTime)


class SyncRun(Scoped, Base):
    """One round: a "sync now" call (``manual``) or the scheduler's (``scheduled``)."""

    __tablename__ = "sync_runs"
    __table_args__ = (Index("ix_sync_runs_owner_state", "owner_id", "state"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(String(32))
    trigger: Mapped[str] = mapped_column(String(20))
    connector: Mapped[str] = mapped_column(String(40))
    folder_ids: Mapped[list[Any]] = mapped_column(default=list)
    state: Mapped[str] = mapped_column(String(20), default="running")
    counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(String(500))
    # A run whose worker died stops counting as running when this passes.
    lease_expires_at: Mapped[datetime] = mapped_column(DateTime)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class DriveAuthorization(Base):
    """A user's Google Drive authorisation, sealed with the instance's secret (never returned).
    A user's, not a workspace's: the same account reads the same drive in each of its workspaces."""

    __tablename__ = "drive_authorizations"
    vault_hash: Mapped[str] = mapped_column(String(32), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    sealed: Mapped[str] = mapped_column(Text)
    # Set when the token endpoint refused it (revoked or expired): the owner must authorise again.
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
