"""Durable hierarchical analyses and their planned steps (docs/decisions/0018)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Scoped, new_id, utcnow


class Analysis(Scoped, Base):
    """A durable hierarchical analysis, pinned to one revision (retention keeps it while it exists).

    ``levels`` holds the number of parts each level has (map first), known once the level below
    is done; ``result`` the final points with the chunk ids they cite.
    """

    __tablename__ = "analyses"
    # The sweeper's search for lost work (storage.lost_work) reads only unfinished analyses.
    __table_args__ = (Index("ix_analyses_state", "state", "lease_expires_at"),)
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
