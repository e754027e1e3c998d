"""When a role last proved it was alive: the job sweeper writes ``coordinator`` on every run."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from storage.models import Heartbeat, utcnow

COORDINATOR = "coordinator"


def beat(session: Session, name: str) -> None:
    row = session.get(Heartbeat, name)
    if row is None:
        session.add(Heartbeat(name=name, seen_at=utcnow()))
    else:
        row.seen_at = utcnow()


def last_seen(session: Session, name: str) -> datetime | None:
    row = session.get(Heartbeat, name)
    return row.seen_at if row is not None else None
