"""Recovery from crashes with real processes: a worker SIGKILLed mid-job, Redis restarted with
the queued messages lost, and the whole embedded service stopped mid-job. Split from
test_durability.py so that the two run side by side (each file stays in one test process)."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest
import redis

from support.big_vault import BIG_COPIES, FAST, big_ids, big_vault
from support.live import deployment

pytestmark = pytest.mark.integration


def test_sigkilled_worker_mid_job_then_restart_finishes_without_duplicates(tmp_path: Path) -> None:
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, **FAST) as d:
        d.start_web()
        d.start_worker("first", beat=True)
        notebook_id = d.api.create(["dmca", *big_ids()])
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["done"] >= 2)
        d.kill_worker("first", signal.SIGKILL)
        d.start_worker("second", beat=True)
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded"
        revision_id = detail["active_revision"]["id"]
        states = d.query("SELECT state, count(*) FROM sources WHERE revision_id = ? GROUP BY state", revision_id)
        assert states == [("available", BIG_COPIES + 1)]
        per_source = d.query(
            "SELECT count(*), count(DISTINCT ordinal) FROM chunks WHERE revision_id = ? GROUP BY source_id", revision_id
        )
        assert len(per_source) == BIG_COPIES + 1 and all(total == distinct for total, distinct in per_source)
        assert d.query("SELECT count(*) FROM chunks_fts") == d.query("SELECT count(*) FROM chunks")


def test_redis_restart_losing_queued_messages_then_recovery(tmp_path: Path) -> None:
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, **FAST) as d:
        assert d.broker is not None
        d.start_web()
        notebook_id = d.api.create(["dmca"])
        assert redis.Redis.from_url(d.broker.url).llen("coordinator") >= 1
        d.broker.restart()
        assert redis.Redis.from_url(d.broker.url).llen("coordinator") == 0
        d.start_worker("w", beat=True)
        detail = d.api.wait_for_job(notebook_id, timeout=120)
        assert detail["job"]["state"] == "succeeded" and detail["active_revision"]["number"] == 1


def test_a_whole_service_restart_mid_job_resumes_and_finishes(tmp_path: Path) -> None:
    """Embedded default: `gnosi serve` (web + worker) stops mid-job and starts again."""
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, **FAST) as d:
        d.start_web()
        notebook_id = d.api.create(["dmca", *big_ids()])
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["done"] >= 2)
        d.crash_web()
        d.start_web()
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded"
        revision_id = detail["active_revision"]["id"]
        assert d.query("SELECT count(*) FROM sources WHERE revision_id = ? AND state = 'available'", revision_id) == [
            (BIG_COPIES + 1,)
        ]
