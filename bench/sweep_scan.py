"""What the sweeper's search for lost work costs as finished jobs and analyses pile up.

Usage: .venv/bin/python bench/sweep_scan.py [--finished 1000,100000] [--repeats 40]

Every sweep (``GNOSI_SWEEP_INTERVAL_SECONDS``, 30 by default) asks, without the write lock,
whether any job, analysis or knowledge job or event is queued since a while or running on an
expired lease (``tasks.sweeper.anything_lost``).
Each size is one database, migrated to head, holding that many finished jobs and as many finished
analyses, plus a few running on live leases (nothing is lost: the common case). Its copy has the
same rows without the two state indexes of migration 0018. The two are timed in turns, in one run,
and the medians compared.
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sqlalchemy import insert  # noqa: E402

from storage.db import Database  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from storage.models import Analysis, Job, Revision, utcnow  # noqa: E402
from support.notebook_rows import private_notebook  # noqa: E402
from tasks.sweeper import anything_lost  # noqa: E402

VAULT = "v" * 32
STATE_INDEXES = ("ix_jobs_state", "ix_analyses_state")
RUNNING = 5


def build(path: Path, finished: int) -> None:
    """A database at head with ``finished`` succeeded jobs and analyses, and a few running ones."""
    upgrade(path)
    db = Database(path)
    later, long_ago = utcnow() + timedelta(minutes=5), utcnow() - timedelta(days=30)
    with db.session() as session:
        notebook = private_notebook(session, VAULT)
        scope = {"vault_hash": VAULT, "workspace_id": notebook.workspace_id, "notebook_id": notebook.id}
        revision = Revision(**scope, number=1, state="active")
        session.add(revision)
        session.flush()
        states = ["succeeded"] * finished + ["running"] * RUNNING
        session.execute(insert(Job), [
            {**scope, "kind": "ingest", "state": state, "params": {}, "created_at": long_ago,
             "lease_expires_at": later if state == "running" else long_ago}
            for state in states
        ])
        session.execute(insert(Analysis), [
            {**scope, "revision_id": revision.id, "kind": "summary", "engine": "extractive", "state": state,
             "created_at": long_ago, "lease_expires_at": later if state == "running" else long_ago}
            for state in states
        ])
    db.engine.dispose()


def without_state_indexes(path: Path, copy: Path) -> None:
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as connection:
        for index in STATE_INDEXES:
            connection.execute(f"DROP INDEX {index}")


def scan_ms(db: Database) -> float:
    with db.reader() as session:
        started = time.perf_counter()
        found = anything_lost(session, utcnow() - timedelta(minutes=10))
        elapsed = (time.perf_counter() - started) * 1000
    assert not found, "nothing is lost in these databases"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", default="1000,100000", help="finished jobs (and as many analyses) per database")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    print(f"{RUNNING} running jobs and analyses on live leases besides the finished ones; {args.repeats} scans "
          "of each database, in turns; the sweeper's read of every work table, in ms\n")
    print("| finished jobs + analyses | with the state indexes p50 / p95 | without p50 / p95 | p50 ratio |")
    print("|---|---|---|---|")
    for finished in (int(n) for n in args.finished.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            indexed, plain = Path(tmp) / "indexed.sqlite3", Path(tmp) / "plain.sqlite3"
            build(indexed, finished)
            without_state_indexes(indexed, plain)
            databases = {"indexed": Database(indexed), "plain": Database(plain)}
            for db in databases.values():
                scan_ms(db)  # untimed: connections opened, statements compiled
            times: dict[str, list[float]] = {name: [] for name in databases}
            for _ in range(args.repeats):
                for name, db in databases.items():
                    times[name].append(scan_ms(db))
            cells = {name: _p50_p95(values) for name, values in times.items()}
            ratio = statistics.median(times["plain"]) / statistics.median(times["indexed"])
            print(f"| {finished:,} + {finished:,} | {cells['indexed']} | {cells['plain']} | {ratio:.1f}× |")


def _p50_p95(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.2f} / {ordered[int(0.95 * (len(ordered) - 1))]:.2f}"


if __name__ == "__main__":
    main()
