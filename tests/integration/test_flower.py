"""Flower from the documented command, as a real process on real Redis: refused without a password,
answering with one, and showing role-named workers and the five ingestion steps they ran."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from support.live import GNOSI, deployment
from support.services import REPO, free_port, stop, wait_for_port
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

AUTH = ("ops", "correct horse battery")
STEPS = {"ingest.fingerprint", "ingest.extract", "ingest.chunk", "ingest.index", "ingest.activate"}


def test_flower_needs_a_password_and_shows_role_named_workers_and_tasks(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="DMCA summary")
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        refused = subprocess.run([GNOSI, "flower"], env=d.env, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "FLOWER_BASIC_AUTH" in refused.stderr

        port = free_port()
        log = (tmp_path / "flower.log").open("wb")
        flower = subprocess.Popen(
            [GNOSI, "flower", "--port", str(port)], env={**d.env, "FLOWER_BASIC_AUTH": ":".join(AUTH)},
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
        )
        workers: list[subprocess.Popen] = []
        try:
            d.start_web()
            for queues in ("coordinator", "extract,chunk"):
                workers.append(subprocess.Popen(
                    [GNOSI, "worker", "-Q", queues, "-c", "1"], env=d.env, cwd=REPO,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                ))
            wait_for_port(port, timeout=60, process=flower)
            base = f"http://127.0.0.1:{port}"
            assert httpx.get(f"{base}/api/workers").status_code == 401
            assert httpx.get(f"{base}/healthcheck").text == "OK", "compose's healthcheck asks without the password"
            notebook_id = d.api.create(["dmca"])
            assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"

            names: set[str] = set()
            nodes: set[str] = set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not STEPS <= names:
                tasks = httpx.get(f"{base}/api/tasks", auth=AUTH, timeout=10).json()
                names = {task["name"] for task in tasks.values()}
                nodes = {task["worker"] for task in tasks.values() if task.get("worker")}
                time.sleep(0.5)
            assert STEPS <= names, names
            assert any(n.startswith("coordinator-") for n in nodes) and any(n.startswith("extract-") for n in nodes), nodes
        finally:
            for process in workers:
                stop(process)
            stop(flower)
            log.close()
