"""Rate limits every web process shares, kept in the database (never in the broker).

Generic cell rate algorithm (GCRA): each key keeps one number, its theoretical arrival time
(``tat``). A hit is allowed when moving ``tat`` one interval later keeps it within ``burst``
intervals of now; then ``tat`` moves. One upsert decides and records a hit atomically, so two
processes can never both take the last slot. ``limit`` hits per ``period`` seconds, all of them
available at once after a quiet period, like the moving window it replaces.
"""
from __future__ import annotations

import random
import time

from sqlalchemy import delete, text
from sqlalchemy.orm import Session

from storage.models import RateLimit

# Rows whose slots have all come back carry no information; a few calls in a thousand sweep them.
_SWEEP_PROBABILITY = 0.002

_HIT = text(
    "INSERT INTO rate_limits (key, tat) VALUES (:key, :now + :interval) "
    "ON CONFLICT (key) DO UPDATE SET tat = max(tat, :now) + :interval "
    "WHERE max(tat, :now) + :interval - :now <= :window "
    "RETURNING tat"
)


def hit(session: Session, key: str, *, limit: int, period: float, now: float | None = None) -> float:
    """Take one slot for ``key``; returns 0 when allowed, else the seconds until the next slot."""
    now = time.time() if now is None else now
    interval = period / limit
    allowed = session.execute(_HIT, {"key": key, "now": now, "interval": interval, "window": period}).first()
    if random.random() < _SWEEP_PROBABILITY:
        session.execute(delete(RateLimit).where(RateLimit.tat < now))
    if allowed is not None:
        return 0.0
    tat = session.get(RateLimit, key).tat
    return max(tat + interval - period - now, 0.001)
