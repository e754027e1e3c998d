"""`gnosi serve --reload` restarts the web processes and the embedded worker when backend code
changes. It runs on a copy of the packages (on PYTHONPATH), which the test then edits."""
from __future__ import annotations

import compileall
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from support.live import REPO, Deployment, deployment
from support.procs import cmdline, descendants
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

PACKAGES = ("app", "pipeline", "storage", "tasks", "serving", "alembic")


def _copy_code(target: Path) -> Path:
    """The packages, compiled as `make run` compiles the checkout's: with PYTHONDONTWRITEBYTECODE
    set (as on our machines) every restart would otherwise compile all of them again, and under a
    loaded test run a restart then took over a minute."""
    for name in PACKAGES:
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(target, quiet=1)
    return target


def _eventually(check: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.TransportError:
            pass  # between the old service and the new one
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout} s: {what}")


def _celery_pids(d: Deployment) -> set[int]:
    assert d.web is not None
    return {pid for pid in descendants(d.web.pid) if "celery" in " ".join(cmdline(pid))}


def test_serve_reload_restarts_web_and_worker_on_a_code_change(tmp_path: Path) -> None:
    code = _copy_code(tmp_path / "code")
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, PYTHONPATH=str(code)) as d:
        d.start_web("--reload")
        assert d.api.get("/healthz").json() == {"status": "ok"}
        _eventually(lambda: bool(_celery_pids(d)), "the embedded worker runs")

        health = code / "app" / "api" / "health.py"
        health.write_text(health.read_text().replace('{"status": "ok"}', '{"status": "ok", "edited": True}'))
        _eventually(lambda: d.api.get("/healthz").json().get("edited") is True, "the web process runs the new code")

        _eventually(lambda: bool(_celery_pids(d)), "the embedded worker runs again")
        workers = _celery_pids(d)
        chunker = code / "pipeline" / "chunker.py"
        chunker.write_text(chunker.read_text() + "\n# edited by the reload test\n")
        _eventually(lambda: bool(_celery_pids(d)) and not _celery_pids(d) & workers, "a new embedded worker")

        _eventually(lambda: d.api.get("/healthz").status_code == 200, "the web processes answer again")
        notebook_id = d.api.create(["dmca"])
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    assert "chunker.py changed, restarting" in (tmp_path / "serve.log").read_text()
