"""Durable work whose messages may be lost: one query for every kind of leased row.

Ingestion jobs, analyses and knowledge jobs share a life (queued → running → ended,
``cancelling`` between) and a lease their messages renew; the sweeper resends whatever ``lost``
finds, and a cancel or a failure lands the same way on each.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from storage.models import utcnow

Row = TypeVar("Row")


def lost(session: Session, model: type[Row], *, queued_before: datetime) -> list[Row]:
    """Rows of ``model`` queued since before ``queued_before``, or running (or cancelling) on an
    expired lease."""
    return list(session.scalars(lost_query(model, queued_before=queued_before, now=utcnow())))


def lost_query(model: type[Row], *, queued_before: datetime, now: datetime) -> Select[tuple[Row]]:
    """``lost``'s query: each work table has an index leading with ``state`` for it, so the
    sweeper reads the unfinished rows only, however many have finished."""
    table: Any = model
    return select(model).where(
        ((table.state == "queued") & (table.created_at < queued_before))
        | (table.state.in_(("running", "cancelling")) & (table.lease_expires_at < now))
    )


def cancelled(row: Any) -> None:
    row.state, row.finished_at = "cancelled", utcnow()


def failed(row: Any, code: str, message: str) -> None:
    """End the work ``failed`` with a bounded reason."""
    row.state, row.error_code, row.error, row.finished_at = "failed", code, message[:500], utcnow()


def request_cancel(row: Any) -> str:
    """Ask the work to stop: a queued one is cancelled now, a running one at its next message."""
    if row.state == "queued":
        cancelled(row)
    elif row.state == "running":
        row.state = "cancelling"
    return row.state
