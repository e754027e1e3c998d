"""The shared GCRA limiter: a burst of ``limit``, then one slot per ``period / limit``."""
from __future__ import annotations


import pytest

from storage import rate_limits
from storage.db import Database


def _hit(db: Database, key: str, now: float) -> float:
    with db.session() as session:
        return rate_limits.hit(session, key, limit=3, period=60, now=now)


def test_a_burst_then_one_slot_per_interval(db: Database) -> None:
    assert [_hit(db, "chat:u1", 1000.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert _hit(db, "chat:u1", 1000.0) == pytest.approx(20.0)
    assert _hit(db, "chat:u1", 1010.0) == pytest.approx(10.0)  # a refused hit takes nothing
    assert _hit(db, "chat:u1", 1020.0) == 0.0
    assert _hit(db, "chat:u1", 1020.0) == pytest.approx(20.0)
    assert _hit(db, "chat:u2", 1020.0) == 0.0  # keys never share slots


def test_a_quiet_period_gives_the_whole_burst_back(db: Database) -> None:
    for _ in range(3):
        _hit(db, "refresh:u", 0.0)
    assert _hit(db, "refresh:u", 0.0) > 0
    assert [_hit(db, "refresh:u", 61.0) for _ in range(3)] == [0.0, 0.0, 0.0]
