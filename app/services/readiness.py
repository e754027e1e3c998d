"""Whether this instance can do its work now: what ``GET /readyz`` reports.

- database: a fresh connection can take the write lock and write (a read-only file, a full or
  vanished disk, a lock held past ``WRITE_WAIT_SECONDS`` fail it);
- migrations: the database is at this code's schema revision;
- broker: a connection to it opens (Redis, or the embedded SQLite file);
- coordinator: the job sweeper ran recently. Beat sends it through the broker to a coordinator
  worker every GNOSI_SWEEP_INTERVAL_SECONDS, and it writes a heartbeat row, so a recent row says
  all three worked (storage.heartbeats).
"""
from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass

from celery import Celery

from app.extensions import Services
from storage import heartbeats, migrate
from storage.models import utcnow

WRITE_WAIT_SECONDS = 5
# A coordinator is taken for gone after missing this many sweeps in a row.
MISSED_SWEEPS = 3


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def checks(svc: Services, celery: Celery) -> list[Check]:
    probes = {
        "database": lambda: _database(svc),
        "migrations": lambda: _migrations(svc),
        "broker": lambda: _broker(celery),
        "coordinator": lambda: _coordinator(svc),
    }
    return [_run(name, probe) for name, probe in probes.items()]


def _run(name: str, probe: Callable[[], tuple[bool, str]]) -> Check:
    """A probe's verdict, or its failure (kombu and the database drivers raise their own errors)."""
    try:
        ok, detail = probe()
    except Exception as err:  # noqa: BLE001
        ok, detail = False, f"{type(err).__name__}: {err}"[:300]
    return Check(name, ok, detail)


def _database(svc: Services) -> tuple[bool, str]:
    with closing(sqlite3.connect(svc.settings.database_path, timeout=WRITE_WAIT_SECONDS, isolation_level=None)) as db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE alembic_version SET version_num = version_num")
        db.execute("ROLLBACK")
    return True, "writable"


@functools.cache
def _head() -> str:
    return migrate.head()


def _migrations(svc: Services) -> tuple[bool, str]:
    found = migrate.current_revision(svc.settings.database_path)
    if found != _head():
        return False, f"schema {found}, this version needs {_head()}: run gnosi db upgrade"
    return True, f"schema {found}"


def _broker(celery: Celery) -> tuple[bool, str]:
    with celery.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, interval_start=0, timeout=WRITE_WAIT_SECONDS)
    return True, "reachable"


def _coordinator(svc: Services) -> tuple[bool, str]:
    interval = svc.settings.sweep_interval_seconds
    with svc.db.reader() as session:
        seen = heartbeats.last_seen(session, heartbeats.COORDINATOR)
    if seen is None:
        return False, "the job sweeper has not run yet: start a coordinator worker with --beat"
    age = (utcnow() - seen).total_seconds()
    if age > MISSED_SWEEPS * interval + 10:
        return False, f"the job sweeper last ran {age:.0f} s ago (every {interval} s)"
    return True, f"the job sweeper ran {age:.0f} s ago"
