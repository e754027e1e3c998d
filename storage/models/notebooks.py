"""Notebooks, their ACL and members, revisions, sources, chunks and vectors, jobs, audit outcomes."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


class Notebook(Scoped, Base):
    __tablename__ = "notebooks"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    title: Mapped[str] = mapped_column(String(300))
    visibility: Mapped[str] = mapped_column(String(20))
    conversation_mode: Mapped[str] = mapped_column(String(20))
    creator_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    table_id: Mapped[str] = mapped_column(String(200))
    active_revision_id: Mapped[str | None] = mapped_column(
        ForeignKey("revisions.id", use_alter=True, name="fk_notebook_active_revision"),
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class NotebookAcl(Scoped, Base):
    __tablename__ = "notebook_acl"
    notebook_id: Mapped[str] = mapped_column(
        ForeignKey("notebooks.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))


class NotebookResource(Scoped, Base):
    """Current membership: removing a row hides its evidence at once, before any new revision."""

    __tablename__ = "notebook_resources"
    notebook_id: Mapped[str] = mapped_column(
        ForeignKey("notebooks.id", ondelete="CASCADE"), primary_key=True
    )
    resource_id: Mapped[str] = mapped_column(String(500), primary_key=True)
    added_by: Mapped[str] = mapped_column(String(32))
    added_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_success_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Consecutive ingestions that ended with this resource in error, and the earliest time an
    # opening may try it again (exponential backoff; an explicit refresh does not wait).
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    retry_at: Mapped[datetime | None] = mapped_column(DateTime)


class Revision(Scoped, Base):
    __tablename__ = "revisions"
    __table_args__ = (UniqueConstraint("notebook_id", "number"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(
        ForeignKey("notebooks.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(20), default="draft")
    job_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime)


class Source(Scoped, Base):
    __tablename__ = "sources"
    __table_args__ = (
        UniqueConstraint("revision_id", "resource_id", "field", "value"),
        Index("ix_sources_revision_chunks", "revision_id", "chunks_source_id"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"))
    revision_id: Mapped[str] = mapped_column(
        ForeignKey("revisions.id", ondelete="CASCADE"), index=True
    )
    resource_id: Mapped[str] = mapped_column(String(500))
    field: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    value: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    file_size: Mapped[int | None] = mapped_column(Integer)
    file_mtime_ns: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(20), default="pending")
    error_code: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(String(500))
    mime: Mapped[str | None] = mapped_column(String(100))
    title: Mapped[str | None] = mapped_column(String(500))
    resource_title: Mapped[str | None] = mapped_column(String(500))
    final_url: Mapped[str | None] = mapped_column(Text)
    etag: Mapped[str | None] = mapped_column(String(300))
    last_modified: Mapped[str | None] = mapped_column(String(100))
    # A streaming source's fingerprint from its metadata-only probe (pipeline.streaming.probe).
    media_fingerprint: Mapped[str | None] = mapped_column(String(64))
    content_hash: Mapped[str | None] = mapped_column(String(64))
    # A recording's length and what wrote its transcript (a speech model or the site's subtitles).
    duration_seconds: Mapped[float | None] = mapped_column(Float)
    transcribed_by: Mapped[str | None] = mapped_column(String(100))
    page_count: Mapped[int | None] = mapped_column(Integer)
    pages_needing_ocr: Mapped[list[Any]] = mapped_column(default=list)
    checked_at: Mapped[datetime | None] = mapped_column(DateTime)
    # The cached extraction the chunks were made from, and how they were made (chunking, embedder).
    extraction_key: Mapped[str | None] = mapped_column(String(64), index=True)
    chunking: Mapped[str | None] = mapped_column(String(200))
    # Times this source was sent to the extract workers in this revision (lease recovery resends).
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # The source version whose chunks this source serves: itself, or the source of an earlier
    # revision holding the same chunks, which a refresh shares instead of copying (storage.revisions;
    # docs/decisions/0011). Nullable only because SQLite adds no NOT NULL column to a table that
    # others reference without rebuilding it; every row has both.
    chunks_revision_id: Mapped[str] = mapped_column(String(32), nullable=True)
    chunks_source_id: Mapped[str] = mapped_column(String(32), nullable=True)


class Chunk(Scoped, Base):
    """A citable passage. ``id`` is the FTS5 rowid; ``chunk_id`` is the stable public id."""

    __tablename__ = "chunks"
    __table_args__ = (
        UniqueConstraint("revision_id", "chunk_id"),
        Index("ix_chunks_revision_source", "revision_id", "source_id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    chunk_id: Mapped[str] = mapped_column(String(40))
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"))
    revision_id: Mapped[str] = mapped_column(ForeignKey("revisions.id", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    resource_id: Mapped[str] = mapped_column(String(500))
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    # The document's names (pipeline.chunk_context), indexed as chunks_fts's first column.
    context: Mapped[str] = mapped_column(Text, default="", server_default="")
    locator: Mapped[dict[str, Any]] = mapped_column()


class ChunkVector(Base):
    __tablename__ = "chunk_vectors"
    chunk_pk: Mapped[int] = mapped_column(
        ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True
    )
    embedder: Mapped[str] = mapped_column(String(60))
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class Job(Scoped, Base):
    """The durable truth about a unit of background work; brokers only carry its id."""

    __tablename__ = "jobs"
    # ix_jobs_state: the sweeper's search for lost work (storage.lost_work) reads only unfinished jobs.
    __table_args__ = (
        Index("ix_jobs_notebook_state", "notebook_id", "state"),
        Index("ix_jobs_state", "state", "lease_expires_at"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(20), default="queued")
    rerun_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    requested_by: Mapped[str | None] = mapped_column(String(32))
    revision_id: Mapped[str | None] = mapped_column(String(32))
    done: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int] = mapped_column(Integer, default=0)
    current_resource_id: Mapped[str | None] = mapped_column(String(500))
    # What a worker reported doing on that resource ("OCR: page 12 of 40"), until its result.
    activity: Mapped[str | None] = mapped_column(String(200))
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class AuditOutcome(Scoped, Base):
    __tablename__ = "audit_outcomes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    notebook_id: Mapped[str] = mapped_column(
        ForeignKey("notebooks.id", ondelete="CASCADE"), index=True
    )
    job_id: Mapped[str | None] = mapped_column(String(32))
    resource_id: Mapped[str] = mapped_column(String(500))
    source_value: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(20))
    detail: Mapped[str | None] = mapped_column(String(500))
    checked_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
