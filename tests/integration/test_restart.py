"""Restarting the embedded default (`gnosi serve` with its own Celery worker and beat), with real
processes and real signals: a killed serve leaves nothing behind, and a second start on the same
LOCAL_DATA is refused."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from support import procs
from support.live import GNOSI, Deployment, deployment
from support.services import REPO, free_port
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

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
