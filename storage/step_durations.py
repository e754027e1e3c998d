"""How long ingestion steps take, kept as histogram buckets in ``notebooks.sqlite3``.

Steps run in many processes, some without the database (extract workers): their durations travel
with the messages the steps already send, and the coordinator writes them here with the source's
result. Every web process then reads the same numbers (``GET /metrics``), however many there are,
and they survive restarts. One upsert per observation: the bucket's row counts the run and adds
its seconds.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from storage.models import StepDuration

STEPS = ("fingerprint", "extract", "chunk", "index", "activate")
# Upper bounds in seconds (a run of exactly a bound counts in its bucket, as Prometheus's ``le``);
# the last bucket, one past these, is +Inf. From a small page's chunking to minutes of OCR.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

_OBSERVE = text(
    "INSERT INTO step_durations (step, bucket, runs, seconds) VALUES (:step, :bucket, 1, :seconds) "
    "ON CONFLICT (step, bucket) DO UPDATE SET runs = runs + 1, seconds = seconds + :seconds"
)


@dataclass(frozen=True)
class Histogram:
    """One step's runs per bucket (not cumulative; the last is +Inf) and their total seconds."""

    runs: tuple[int, ...]
    seconds: float

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus's buckets: runs at or below each bound, ending with ``+Inf``."""
        bounds = [*(repr(bound) for bound in BUCKETS), "+Inf"]
        total, buckets = 0, []
        for bound, runs in zip(bounds, self.runs):
            total += runs
            buckets.append((bound, total))
        return buckets


def observe(session: Session, timings: Mapping[str, float]) -> None:
    """Count one run of each step in ``timings`` (step → seconds); unknown steps and nonsense
    values (a message is data from another host) are left out."""
    for step, seconds in timings.items():
        if step in STEPS and isinstance(seconds, int | float) and 0 <= seconds < float("inf"):
            bucket = bisect.bisect_left(BUCKETS, seconds)
            session.execute(_OBSERVE, {"step": step, "bucket": bucket, "seconds": float(seconds)})


def histograms(session: Session) -> dict[str, Histogram]:
    """Every step's histogram, each step present (no runs yet: zeros)."""
    runs = {step: [0] * (len(BUCKETS) + 1) for step in STEPS}
    seconds = dict.fromkeys(STEPS, 0.0)
    for row in session.scalars(select(StepDuration)):
        if row.step in runs and 0 <= row.bucket <= len(BUCKETS):
            runs[row.step][row.bucket] = row.runs
            seconds[row.step] += row.seconds
    return {step: Histogram(tuple(runs[step]), seconds[step]) for step in STEPS}
