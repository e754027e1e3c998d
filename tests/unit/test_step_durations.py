"""Step durations kept as histogram buckets in the database (storage.step_durations)."""
from __future__ import annotations


import pytest

from storage import step_durations
from storage.db import Database
from storage.step_durations import BUCKETS


def test_runs_land_in_their_bucket_and_sum_as_prometheus_expects(db: Database) -> None:
    with db.session() as session:
        step_durations.observe(session, {"extract": 0.2, "chunk": 0.004})
        step_durations.observe(session, {"extract": 0.25})  # exactly a bound: counted at it (le)
        step_durations.observe(session, {"extract": 1000.0})  # past every bound: +Inf only
    with db.reader() as session:
        found = step_durations.histograms(session)
    extract = dict(found["extract"].cumulative())
    assert extract["0.1"] == 0 and extract["0.25"] == 2 and extract["300.0"] == 2 and extract["+Inf"] == 3
    assert found["extract"].seconds == pytest.approx(1000.45)
    assert dict(found["chunk"].cumulative())["0.005"] == 1
    assert len(found["index"].cumulative()) == len(BUCKETS) + 1 and found["index"].seconds == 0


def test_what_a_message_claims_is_checked_before_it_is_counted(db: Database) -> None:
    """Extract workers' timings arrive in Celery messages: another step's name, a negative or
    infinite duration, or a string are left out instead of failing the index step."""
    with db.session() as session:
        step_durations.observe(session, {"compile": 1.0, "extract": -1.0, "chunk": float("inf"), "index": "2"})
    with db.reader() as session:
        found = step_durations.histograms(session)
    assert set(found) == set(step_durations.STEPS)
    assert all(histogram.cumulative()[-1][1] == 0 for histogram in found.values())
