"""Restarting the embedded default (`gnosi serve` with its own Celery worker and beat), with real
processes and real signals: a killed serve leaves nothing behind, a second start on the same
LOCAL_DATA is refused, and after a whole-tree kill the next start resumes the job at once instead
of waiting out the 300 s lease."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from support import procs
from support.live import GNOSI, Deployment, deployment
from support.services import REPO, free_port
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

COPIES = 16
RESUME_WITHIN_S = 30
# Well under the lease after which a lost job would be taken up anyway.
FINISH_WITHIN_S = 150


def small_vault(tmp: Path) -> VaultBuilder:
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    return vault


def started_serve(d: Deployment) -> set[int]:
    """Start `gnosi serve`, wait until its worker has done a job, return every process below it."""
    d.start_web()
    assert d.web is not None
    notebook_id = d.api.create(["dmca"])
    assert d.api.wait_for_job(notebook_id, timeout=120)["job"]["state"] == "succeeded"
    tree = procs.descendants(d.web.pid)
    d.stack.callback(procs.kill_all, tree)  # whatever the code under test leaves behind
    return tree


def test_a_sigkilled_serve_takes_its_worker_pool_and_beat_with_it(tmp_path: Path) -> None:
    vault = small_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, redis=False) as d:
        tree = started_serve(d)
        assert d.web is not None
        assert len(procs.beat_workers(d.env["LOCAL_DATA"])) == 1
        # web worker, Celery worker, its two pool processes and its beat process
        assert len(tree) >= 5, [procs.cmdline(pid) for pid in tree]
        os.kill(d.web.pid, signal.SIGKILL)  # serve alone: nobody else signals its children
        d.web.wait()
        survivors = procs.wait_until_dead(tree, timeout=10)
        assert not survivors, [procs.cmdline(pid) for pid in survivors]


def _contender(d: Deployment, name: str, *args: str) -> tuple[int | None, str]:
    """Run another gnosi command on the same LOCAL_DATA; (exit status or None if it kept running, output)."""
    log = d.tmp / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [GNOSI, *args], env={**d.env, "GNOSI_PORT": str(free_port())}, cwd=REPO, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        status: int | None = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        status = None
        procs.kill_all({process.pid, *procs.descendants(process.pid)})
        process.wait()
    return status, log.read_text(errors="replace")


def test_b_a_second_start_on_the_same_local_data_is_refused(tmp_path: Path) -> None:
    vault = small_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, redis=False) as d:
        started_serve(d)
        assert d.web is not None
        status, output = _contender(d, "second-serve", "serve")
        assert status not in (None, 0), f"a second `gnosi serve` started:\n{output}"
        assert str(d.web.pid) in output, output  # it says which process to stop
        status, output = _contender(d, "beat-worker", "worker", "--beat")
        assert status not in (None, 0), f"a second beat started with `gnosi worker --beat`:\n{output}"
        beats = procs.beat_workers(d.env["LOCAL_DATA"])
        assert len(beats) == 1 and beats[0] in procs.descendants(d.web.pid)
        notebook_id = d.api.create(["dmca"], title="still served")  # the first instance is unharmed
        assert d.api.wait_for_job(notebook_id, timeout=120)["job"]["state"] == "succeeded"


def test_c_whole_tree_kill_mid_job_resumes_within_seconds_not_after_the_lease(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    big = vault.attach_corpus("pdf/GeoTopo-komprimiert.pdf")
    ids = ["dmca"] + [vault.record(f"big-{i:02d}", f"Lecture notes {i}", file=big) for i in range(COPIES)]
    with deployment(tmp_path, vault.root, vault.table_id, redis=False) as d:
        assert "GNOSI_JOB_LEASE_SECONDS" not in d.env  # the default 300 s lease
        d.start_web()
        notebook_id = d.api.create(ids)
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["done"] >= 2)
        d.crash_web()  # SIGKILL to serve, its web worker, its Celery worker, pool and beat
        assert d.query("SELECT state FROM jobs WHERE notebook_id = ?", notebook_id) == [("running",)]
        done_at_crash = d.query("SELECT count(*) FROM sources WHERE state = 'available'")[0][0]

        restarted = time.monotonic()
        d.start_web()
        # The job moves again within seconds of the restart (not after its 300 s lease); finishing
        # the remaining sources then takes what this machine's cores take.
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["done"] > done_at_crash, timeout=RESUME_WITHIN_S)
        resumed_in = time.monotonic() - restarted
        detail = d.api.wait_for_job(notebook_id, timeout=FINISH_WITHIN_S)
        print(f"job moved {resumed_in:.1f} s and finished {time.monotonic() - restarted:.1f} s after the restart")
        assert detail["job"]["state"] == "succeeded"
        revision_id = detail["active_revision"]["id"]
        assert d.query("SELECT state, count(*) FROM sources WHERE revision_id = ? GROUP BY state", revision_id) == [
            ("available", len(ids))
        ]
        assert d.query(
            "SELECT count(*) = count(DISTINCT source_id || '/' || ordinal) FROM chunks WHERE revision_id = ?",
            revision_id,
        ) == [(1,)]


def test_d_a_queued_job_whose_message_died_with_the_worker_starts_at_the_restart(tmp_path: Path) -> None:
    """The worker took the job's message off the embedded broker and was killed before claiming the
    job: the message is gone and the job is still queued, which the periodic sweep would only take
    for lost after a whole lease."""
    vault = small_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, redis=False) as d:
        d.start_web()
        notebook_id = d.api.create(["dmca"])  # the embedded worker needs seconds to start
        d.crash_web()
        assert d.query("SELECT state FROM jobs WHERE notebook_id = ?", notebook_id) == [("queued",)]
        broker = Path(d.env["LOCAL_DATA"]) / "system" / "broker.sqlite3"
        with sqlite3.connect(broker) as conn:  # what kombu does to a message a worker takes
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # tasks.celery_app
            assert conn.execute("UPDATE kombu_message SET visible = 0 WHERE visible = 1").rowcount >= 1

        d.start_web()
        detail = d.api.wait_for_job(notebook_id, timeout=RESUME_WITHIN_S)
        assert detail["job"]["state"] == "succeeded" and detail["active_revision"]["number"] == 1
