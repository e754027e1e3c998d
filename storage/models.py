"""The relational schema. Alembic migrations create it; nothing here creates tables.

Every row carries ``vault_hash`` and ``workspace_id`` so that a query can always be scoped by both
(users are the exception: one account may belong to several workspaces of a vault; memberships and
tokens carry the workspace).
"""
from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
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
    and_,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    """Naive UTC: SQLite stores no zone, so every timestamp is UTC by convention."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Scoped:
    vault_hash: Mapped[str] = mapped_column(String(32), index=True)
    workspace_id: Mapped[str] = mapped_column(String(32), index=True)


def in_notebook(model: Any, notebook: Notebook) -> ColumnElement[bool]:
    """Rows of ``model`` (a scoped table with ``notebook_id``) that belong to ``notebook``.

    The notebook id alone would do today, but the vault and workspace are part of every filter so
    that an id taken from another vault or workspace can never match (DESIGN: scope on every query).
    """
    return and_(
        model.notebook_id == notebook.id,
        model.vault_hash == notebook.vault_hash,
        model.workspace_id == notebook.workspace_id,
    )


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
    __table_args__ = (Index("ix_jobs_notebook_state", "notebook_id", "state"),)
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


class Analysis(Scoped, Base):
    """A durable hierarchical analysis, pinned to one revision (retention keeps it while it exists).

    ``levels`` holds the number of parts each level has (map first), known once the level below
    is done; ``result`` the final points with the chunk ids they cite.
    """

    __tablename__ = "analyses"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"), index=True)
    revision_id: Mapped[str] = mapped_column(ForeignKey("revisions.id", ondelete="CASCADE"), index=True)
    requested_by: Mapped[str | None] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(20))
    instruction: Mapped[str] = mapped_column(Text, default="", server_default="")
    source_ids: Mapped[list[Any]] = mapped_column(default=list)
    engine: Mapped[str] = mapped_column(String(100))
    state: Mapped[str] = mapped_column(String(20), default="queued")
    levels: Mapped[list[Any]] = mapped_column(default=list)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error_code: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(String(500))
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class AnalysisPart(Base):
    """One map or reduce step, planned with what it reads (``reads``: the chunk ids of a map step,
    or the ordinals of the parts one level down a reduce step reads) within the batch bounds
    (``input_items``, ``input_chars`` say how much); ``points`` is None until it ran."""

    __tablename__ = "analysis_parts"
    __table_args__ = (UniqueConstraint("analysis_id", "level", "ordinal"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    analysis_id: Mapped[str] = mapped_column(ForeignKey("analyses.id", ondelete="CASCADE"), index=True)
    level: Mapped[int] = mapped_column(Integer)
    ordinal: Mapped[int] = mapped_column(Integer)
    reads: Mapped[list[Any]] = mapped_column(default=list)
    input_items: Mapped[int] = mapped_column(Integer)
    input_chars: Mapped[int] = mapped_column(Integer)
    points: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Heartbeat(Base):
    """When a role last proved it was alive (storage.heartbeats)."""

    __tablename__ = "heartbeats"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime)


class StepDuration(Base):
    """Runs of an ingestion step whose duration fell in one histogram bucket (storage.step_durations)."""

    __tablename__ = "step_durations"
    step: Mapped[str] = mapped_column(String(40), primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    runs: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
