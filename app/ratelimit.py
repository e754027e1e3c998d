"""Per-principal rate limits on expensive actions: 429 + Retry-After.

The counters live in ``notebooks.sqlite3`` (storage/rate_limits.py), so every web process of an
instance shares them and Redis carries nothing but Celery messages.
"""
from __future__ import annotations

import math

from app.config import Settings
from app.errors import ApiError
from app.metrics import RATE_LIMITED
from storage import rate_limits
from storage.db import Database

PERIOD_SECONDS = 60.0


class RateLimiter:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.db = db
        self.per_minute = {
            "chat": settings.chat_turns_per_minute,
            "refresh": settings.refreshes_per_minute,
            "open": settings.opens_per_minute,
            "sync": settings.syncs_per_minute,
        }

    def wait(self, action: str, *key: str) -> float:
        """Take one slot of ``action`` for ``key`` (e.g. a user id); 0 when allowed, else the
        seconds until a slot frees up (nothing is taken then)."""
        with self.db.session() as session:
            wait = rate_limits.hit(
                session, ":".join((action, *key)), limit=self.per_minute[action], period=PERIOD_SECONDS
            )
        if wait:
            RATE_LIMITED.labels(action).inc()
        return wait

    def hit(self, action: str, *key: str) -> None:
        """Count one ``action``, or raise 429 with the seconds until the next slot."""
        wait = self.wait(action, *key)
        if wait:
            retry_after = max(1, math.ceil(wait))
            raise ApiError(
                429, "RATE_LIMITED", f"Too many {action} requests; try again in {retry_after} s.",
                retry_after=retry_after,
            )
