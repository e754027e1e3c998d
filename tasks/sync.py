"""Linked-folder sync rounds on Celery (docs/decisions/0020): "sync now" calls and the scheduled
rounds that Celery beat starts. They run on the coordinator queue: a round writes the database and
the blob store of the instance that owns them. The round's row in notebooks.sqlite3 is its truth
(app.services.folder_sync reads it before each folder); the broker carries only its id.
"""
from __future__ import annotations

from celery import shared_task

from app.extensions import services
from app.services.folder_sync import run_round, start_due_rounds


def dispatch_round(run_id: str) -> None:
    sync_round.delay(run_id)


@shared_task(name="sync.round")
def sync_round(run_id: str) -> None:
    run_round(services(), run_id)


@shared_task(name="sync.scheduled")
def scheduled_rounds() -> int:
    """Start a round for every linked folder whose schedule is due (beat sends this every
    GNOSI_SYNC_ROUND_SECONDS); returns how many rounds were started."""
    run_ids = start_due_rounds(services())
    for run_id in run_ids:
        dispatch_round(run_id)
    return len(run_ids)
