"""The coordinator's sweep (every 30 s) reads what may be lost without the write lock: it scans
every job and analysis row, and held the lock meanwhile, stopping any web process whose write met
it (SQLite's busy handler sleeps in C). With nothing lost, its only write is its heartbeat."""
from __future__ import annotations

from typing import TYPE_CHECKING

from steps.test_task_contract import ingest
from support.sqlite_writes import write_transactions

if TYPE_CHECKING:
    from steps.conftest import Instance


def test_a_sweep_with_nothing_lost_writes_its_heartbeat_alone(instance: Instance) -> None:
    _, job = ingest(instance)
    assert job.state == "succeeded", job.error

    with write_transactions(instance.app.extensions["gnosi"].db.engine) as transactions:
        assert instance.celery.tasks["sweep_jobs"]() == 0

    statements = [statement for transaction in transactions for statement in transaction]
    assert len(transactions) == 1 and statements, transactions
    assert all("heartbeats" in statement for statement in statements), statements
