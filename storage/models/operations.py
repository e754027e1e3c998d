"""What the service records about itself: heartbeats and step durations."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    Float,
    Integer,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base


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
