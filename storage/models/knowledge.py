"""The knowledge layer (issue #20, docs/decisions/0021): identities apart from immutable versions.

Every object a person keeps has an identity row with an ``active_version_id`` pointer and version
rows that never change once written: a source and its versions (by content hash), the pages,
blocks and figures a version was parsed into, atomic notes and their versions, the source note (a
table of contents pinning note versions), concepts made of modules fed by contributions, and
knowledge trees. Jobs run a source version through its stages, each stage's output stored as it is
produced; events carry changes to the concepts, with idempotency keys and leases.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


def _notebook() -> Mapped[str]:
    return mapped_column(ForeignKey("notebooks.id", ondelete="CASCADE"), index=True)


class KnowledgeSource(Scoped, Base):
    """A document kept as knowledge: a notebook member's source. ``label`` is its file name, shown
    but never used to tell two sources apart (their versions' content hashes do)."""

    __tablename__ = "knowledge_sources"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    resource_id: Mapped[str] = mapped_column(String(500))
    label: Mapped[str] = mapped_column(String(500))
    state: Mapped[str] = mapped_column(String(20), default="active")
    active_version_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)


class KnowledgeSourceVersion(Scoped, Base):
    __tablename__ = "knowledge_source_versions"
    __table_args__ = (
        UniqueConstraint("source_id", "number"),
        Index("ix_knowledge_source_versions_hash", "notebook_id", "content_hash"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    source_id: Mapped[str] = mapped_column(ForeignKey("knowledge_sources.id", ondelete="CASCADE"), index=True)
    notebook_id: Mapped[str] = _notebook()
    number: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64))
    # The cached extraction (pipeline.extraction_cache) the parse stage reads, and the notebook
    # source (kind, value) it came from.
    extraction_key: Mapped[str] = mapped_column(String(64))
    origin: Mapped[dict[str, Any]] = mapped_column(default=dict)
    label: Mapped[str] = mapped_column(String(500))
    page_count: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgePage(Base):
    __tablename__ = "knowledge_pages"
    source_version_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"), primary_key=True
    )
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str | None] = mapped_column(String(40))


class KnowledgeBlock(Base):
    __tablename__ = "knowledge_blocks"
    source_version_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"), primary_key=True
    )
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True)
    page: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    level: Mapped[int] = mapped_column(Integer, default=0)
    text: Mapped[str] = mapped_column(Text)
    box: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))


class KnowledgeAsset(Base):
    __tablename__ = "knowledge_assets"
    source_version_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    page: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    caption: Mapped[str] = mapped_column(Text)
    box: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))


class KnowledgeJob(Scoped, Base):
    """A source version's way to its source note. ``stage`` is the stage it works on; states:
    queued, running, cancelling, cancelled, completed, completed_with_warnings, failed."""

    __tablename__ = "knowledge_jobs"
    __table_args__ = (Index("ix_knowledge_jobs_state", "state", "lease_expires_at"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    source_version_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"), index=True
    )
    engine: Mapped[str] = mapped_column(String(100))
    state: Mapped[str] = mapped_column(String(30), default="queued")
    stage: Mapped[str] = mapped_column(String(20), default="parse")
    requested_by: Mapped[str | None] = mapped_column(String(32))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    error_code: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class KnowledgeStageOutput(Base):
    """What one stage (or one part of it: a unit's note in ``write`` and ``check``) produced."""

    __tablename__ = "knowledge_stage_outputs"
    job_id: Mapped[str] = mapped_column(ForeignKey("knowledge_jobs.id", ondelete="CASCADE"), primary_key=True)
    stage: Mapped[str] = mapped_column(String(20), primary_key=True)
    part: Mapped[str] = mapped_column(String(40), primary_key=True, default="")
    output: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeNote(Scoped, Base):
    """An atomic note's identity: one knowledge unit (``plan_key``) of one source version."""

    __tablename__ = "knowledge_notes"
    __table_args__ = (UniqueConstraint("source_version_id", "plan_key"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    source_version_id: Mapped[str] = mapped_column(ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"))
    plan_key: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(20), default="active")
    active_version_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeNoteVersion(Base):
    """An immutable version: ``blocks``, ``claims`` and ``evidence`` as ``pipeline.knowledge.types``
    writes them; ``author`` is ``engine:<name>``, ``user:<id>`` or ``agent:<id>``."""

    __tablename__ = "knowledge_note_versions"
    __table_args__ = (UniqueConstraint("note_id", "number"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    note_id: Mapped[str] = mapped_column(ForeignKey("knowledge_notes.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(500))
    summary: Mapped[str] = mapped_column(Text)
    blocks: Mapped[list[Any]] = mapped_column()
    claims: Mapped[list[Any]] = mapped_column()
    evidence: Mapped[list[Any]] = mapped_column()
    images: Mapped[list[Any]] = mapped_column(default=list)
    author: Mapped[str] = mapped_column(String(100))
    job_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeSourceNote(Scoped, Base):
    __tablename__ = "knowledge_source_notes"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    source_version_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"), unique=True
    )
    active_version_id: Mapped[str | None] = mapped_column(String(32))


class KnowledgeSourceNoteVersion(Base):
    """The table of contents: ``toc`` lists ``{"title", "level", "path", "note_id",
    "note_version_id"}`` in reading order, each position pinned to one note version."""

    __tablename__ = "knowledge_source_note_versions"
    __table_args__ = (UniqueConstraint("source_note_id", "number"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    source_note_id: Mapped[str] = mapped_column(ForeignKey("knowledge_source_notes.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    toc: Mapped[list[Any]] = mapped_column()
    job_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeConcept(Scoped, Base):
    """A cross-source concept of one notebook; states: active, withdrawn, suspended."""

    __tablename__ = "knowledge_concepts"
    __table_args__ = (Index("ix_knowledge_concepts_name", "notebook_id", "normalized_name"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    name: Mapped[str] = mapped_column(String(300))
    normalized_name: Mapped[str] = mapped_column(String(300))
    aliases: Mapped[list[Any]] = mapped_column(default=list)
    state: Mapped[str] = mapped_column(String(20), default="active")
    active_version_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeConceptVersion(Base):
    __tablename__ = "knowledge_concept_versions"
    __table_args__ = (UniqueConstraint("concept_id", "number"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    concept_id: Mapped[str] = mapped_column(ForeignKey("knowledge_concepts.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    module_version_ids: Mapped[list[Any]] = mapped_column()
    event_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeModule(Base):
    """One aspect of a concept; states: active, withdrawn (no valid contribution), suspended
    (its inputs changed and it could not be rebuilt)."""

    __tablename__ = "knowledge_modules"
    __table_args__ = (UniqueConstraint("concept_id", "key"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    concept_id: Mapped[str] = mapped_column(ForeignKey("knowledge_concepts.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(100))
    title: Mapped[str] = mapped_column(String(300))
    state: Mapped[str] = mapped_column(String(20), default="active")
    active_version_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeModuleVersion(Base):
    """A module's body built from exactly the contributions it names; ``inputs_key`` hashes their
    note versions and selected blocks, so a later rebuild from the same inputs reuses it."""

    __tablename__ = "knowledge_module_versions"
    __table_args__ = (
        UniqueConstraint("module_id", "number"),
        Index("ix_knowledge_module_versions_inputs", "module_id", "inputs_key"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    module_id: Mapped[str] = mapped_column(ForeignKey("knowledge_modules.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    body: Mapped[list[Any]] = mapped_column()
    inputs_key: Mapped[str] = mapped_column(String(64))
    contribution_ids: Mapped[list[Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeContribution(Scoped, Base):
    """A note version feeding a module with the blocks it actually used (``block_keys``);
    ``decision`` says how it was merged; states: valid, invalid."""

    __tablename__ = "knowledge_contributions"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    concept_id: Mapped[str] = mapped_column(ForeignKey("knowledge_concepts.id", ondelete="CASCADE"), index=True)
    module_id: Mapped[str] = mapped_column(ForeignKey("knowledge_modules.id", ondelete="CASCADE"), index=True)
    note_id: Mapped[str] = mapped_column(ForeignKey("knowledge_notes.id", ondelete="CASCADE"), index=True)
    note_version_id: Mapped[str] = mapped_column(String(32))
    source_version_id: Mapped[str] = mapped_column(String(32), index=True)
    block_keys: Mapped[list[Any]] = mapped_column()
    decision: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20), default="valid")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    invalidated_at: Mapped[datetime | None] = mapped_column(DateTime)


class KnowledgeTree(Scoped, Base):
    __tablename__ = "knowledge_trees"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    title: Mapped[str] = mapped_column(String(300))
    active_version_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeTreeVersion(Base):
    """``nodes``: ``{"key", "parent", "kind": "group" | "concept", "title", "concept_id",
    "concept_version_id"}`` in order; a concept node pins one concept version."""

    __tablename__ = "knowledge_tree_versions"
    __table_args__ = (UniqueConstraint("tree_id", "number"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tree_id: Mapped[str] = mapped_column(ForeignKey("knowledge_trees.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[list[Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class KnowledgeEvent(Scoped, Base):
    """A change the concepts must follow (note published, edited or deleted, source deleted or
    restored). ``idempotency_key`` makes the same change one event; states: queued, running,
    done, failed; a running event holds a lease its worker renews (``heartbeat_at``)."""

    __tablename__ = "knowledge_events"
    __table_args__ = (Index("ix_knowledge_events_state", "state", "lease_expires_at"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    notebook_id: Mapped[str] = _notebook()
    kind: Mapped[str] = mapped_column(String(30))
    subject: Mapped[dict[str, Any]] = mapped_column()
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)
    state: Mapped[str] = mapped_column(String(20), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class KnowledgeApproval(Scoped, Base):
    """A one-time approval of one agent write: the action and its exact arguments, used once."""

    __tablename__ = "knowledge_approvals"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    notebook_id: Mapped[str] = _notebook()
    user_id: Mapped[str] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(40))
    params: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    used_at: Mapped[datetime | None] = mapped_column(DateTime)
