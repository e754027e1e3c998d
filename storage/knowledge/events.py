"""Changes the concepts must follow, as durable events (docs/decisions/0021).

An event is created in the transaction that made the change (a source note published, a note
edited or deleted, a source deleted, restored or replaced by a new version), under an
idempotency key that names the change itself: the same change asked twice is one event, and an
event that is done is never processed again. A worker takes an event with a lease (``heartbeat_at`` says when it took it); the
sweeper resends one whose lease lapsed.
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


def claim(event: KnowledgeEvent, held_for: timedelta) -> bool:
    """Whether a message may process the event now (a queued one is taken; a running one whose
    worker died is taken again by the sweeper's resend, its lease renewed)."""
    if event.state not in ("queued", "running"):
        return False
    event.state = "running"  # attempts are counted by the sweeper's resends, as for jobs
    event.heartbeat_at = utcnow()
    event.lease_expires_at = event.heartbeat_at + held_for
    return True


def done(event: KnowledgeEvent, result: dict[str, Any]) -> None:
    event.state, event.result, event.finished_at, event.lease_expires_at = "done", result, utcnow(), None


def fail(event: KnowledgeEvent, code: str, message: str) -> None:
    event.state, event.error, event.finished_at = "failed", f"{code}: {message}"[:500], utcnow()


def of_notebook(session: Session, notebook: Notebook, *, limit: int, offset: int = 0) -> list[KnowledgeEvent]:
    query = select(KnowledgeEvent).where(in_notebook(KnowledgeEvent, notebook))
    return list(session.scalars(query.order_by(KnowledgeEvent.created_at.desc(), KnowledgeEvent.id).limit(limit).offset(offset)))


def recoverable(session: Session, *, queued_before: datetime) -> list[KnowledgeEvent]:
    return lost(session, KnowledgeEvent, queued_before=queued_before)
