"""Changes the concepts must follow, as durable events (docs/decisions/0021).

An event is created in the transaction that made the change (a source note published, a note
edited or deleted, a source deleted, restored or replaced by a new version), under an
idempotency key that names the change itself: the same change asked twice is one event, and an
event that is done is never processed again. A worker takes an event with a lease and holds it
by a token (when it last renewed it, ``heartbeat_at``); the sweeper takes back and resends one
whose lease lapsed, and the worker that lost it stops at its next check.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.lost_work import lost
from storage.models import KnowledgeEvent, Notebook, in_notebook, utcnow

KINDS = ("note_published", "note_edited", "note_deleted", "source_deleted", "source_restored", "source_replaced")


def enqueue(session: Session, notebook: Notebook, kind: str, subject: dict[str, Any], key: str) -> tuple[KnowledgeEvent, bool]:
    """The event for this change, and whether it is new (False: the same key was enqueued before)."""
    if kind not in KINDS:
        raise ValueError(f"not an event kind: {kind}")
    existing = session.scalar(select(KnowledgeEvent).where(KnowledgeEvent.idempotency_key == key))
    if existing is not None:
        return existing, False
    event = KnowledgeEvent(vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
                           kind=kind, subject=subject, idempotency_key=key, state="queued", attempts=0)
    session.add(event)
    session.flush()
    return event, True


def claim(event: KnowledgeEvent, held_for: timedelta, token: str | None = None) -> str | None:
    """Take the event for one message, with a lease; the token that message holds it by, or None
    when it may not work on it. A queued event is taken; a running one only by the message that
    holds it (its ``token``: a retry of the same work) or after the sweeper took it back from a
    worker that died (``take_back``). A second delivery of a message whose work is still running
    is refused, so two workers never decide one event."""
    if event.state == "queued" or (event.state == "running" and (event.heartbeat_at is None or token == _token(event))):
        event.state = "running"  # attempts are counted by the sweeper's resends, as for jobs
        return renew(event, held_for)
    return None


def renew(event: KnowledgeEvent, held_for: timedelta) -> str:
    """A new lease for the message that holds the event, and its new token."""
    event.heartbeat_at = utcnow()
    event.lease_expires_at = event.heartbeat_at + held_for
    return _token(event)


def holds(event: KnowledgeEvent | None, token: str) -> bool:
    """Whether the message holding ``token`` still holds the event (it runs, and no other took it)."""
    return event is not None and event.state == "running" and _token(event) == token


def take_back(event: KnowledgeEvent) -> None:
    """The sweeper's resend takes the event from a worker whose lease lapsed: that worker no
    longer holds it, and the resent message may claim it."""
    event.heartbeat_at = None


def mark_stored(event: KnowledgeEvent, modules: list[str]) -> None:
    """The event's decisions are stored, and these modules are what they touched: a message that
    takes the event up again (a retry, a resend after a crash) rebuilds them without deciding
    anything again."""
    event.result = {"stored": modules}


def stored(event: KnowledgeEvent) -> list[str] | None:
    """What ``mark_stored`` recorded for a running event, or None when nothing was stored yet."""
    result = event.result if event.state == "running" else None
    return result.get("stored") if isinstance(result, dict) else None


def _token(event: KnowledgeEvent) -> str:
    return event.heartbeat_at.isoformat() if event.heartbeat_at else ""


def done(event: KnowledgeEvent, result: dict[str, Any]) -> None:
    event.state, event.result, event.finished_at, event.lease_expires_at = "done", result, utcnow(), None


def fail(event: KnowledgeEvent, code: str, message: str) -> None:
    event.state, event.error, event.finished_at = "failed", f"{code}: {message}"[:500], utcnow()


def of_notebook(session: Session, notebook: Notebook, *, limit: int, offset: int = 0) -> list[KnowledgeEvent]:
    query = select(KnowledgeEvent).where(in_notebook(KnowledgeEvent, notebook))
    return list(session.scalars(query.order_by(KnowledgeEvent.created_at.desc(), KnowledgeEvent.id).limit(limit).offset(offset)))


def recoverable(session: Session, *, queued_before: datetime) -> list[KnowledgeEvent]:
    return lost(session, KnowledgeEvent, queued_before=queued_before)
