"""`/healthz` and `/readyz` on a real deployment: ready once the coordinator's sweeper has run, and
not ready, naming the cause, while the database cannot be written or the broker is stopped."""
from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.live import Deployment, deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def probe(d: Deployment, path: str) -> httpx.Response:
    """Without credentials: probes need no sign-in."""
    return httpx.get(str(d.api.http.base_url).rstrip("/") + path, timeout=30)


def readyz(d: Deployment) -> tuple[int, dict[str, Any]]:
    response = probe(d, "/readyz")
    return response.status_code, response.json()


def wait_ready(d: Deployment, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (found := readyz(d))[0] != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready after {timeout} s: {found}")
        time.sleep(0.5)
    return found[1]


def failing(body: dict[str, Any]) -> set[str]:
    return {name for name, check in body["checks"].items() if not check["ok"]}


@contextmanager
def unwritable(database: Path) -> Iterator[None]:
    """The database file and its WAL (and the folder, where SQLite would create files) cannot be
    opened for writing, even by root, who ignores permission bits. Connections opened before keep
    their handles, as they would on a real system: the probe opens its own.

    The shared-memory index (``-shm``) stays writable: every open connection has it mapped and
    writes its read marks there, even to read, and a write fault on a mapping of an immutable file
    is SIGBUS. Making it immutable killed whichever process read next (the web process, one run in
    five: only when a sweep had moved the WAL since its last read), which is a test artefact, not
    the read-only database the probe must report.
    """
    wal = database.with_name(database.name + "-wal")
    files = [path for path in (database, wal) if path.exists()] + [database.parent]
    for path in files:
        lock(path, True)
    try:
        yield
    finally:
        for path in files:
            lock(path, False)


def lock(path: Path, locked: bool) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if locked else "-i", str(path)], check=True)
    else:
        path.chmod((0o555 if path.is_dir() else 0o444) if locked else (0o700 if path.is_dir() else 0o600))


def test_ready_then_not_for_an_unwritable_database_or_a_stopped_broker(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    with deployment(tmp_path, vault.root, vault.table_id, GNOSI_SWEEP_INTERVAL_SECONDS="1") as d:
        d.start_web()
        assert probe(d, "/healthz").json() == {"status": "ok"}
        status, body = readyz(d)
        assert status == 503 and body["code"] == "NOT_READY" and failing(body) == {"coordinator"}, body

        d.start_worker("coordinator", "coordinator", beat=True)
        body = wait_ready(d)
        assert body["status"] == "ready" and failing(body) == set()

        with unwritable(d.database):
            status, body = readyz(d)
            assert status == 503 and failing(body) == {"database"}, body
            assert "readonly" in body["checks"]["database"]["detail"]
        wait_ready(d)

        assert d.broker is not None
        d.broker.stop()
        status, body = readyz(d)
        assert status == 503 and "broker" in failing(body), body
        assert probe(d, "/healthz").status_code == 200  # alive all the same
