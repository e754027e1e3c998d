"""compose.yaml's topology, run as local processes with the file's own commands (Docker is not
available here): Redis, web (`gnosi serve`), the coordinator with beat, two extract workers that
see neither the database nor the vault, and the analysis worker. Each worker's healthcheck
answers, web reports ready, a notebook is ingested and searched, and an analysis of it runs on the
analysis worker."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from httpx import Response

from support.live import GNOSI, Deployment, deployment
from support.services import REPO
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

PDFS = ["dmca.pdf", "naacl06-shinyama.pdf", "multilang.pdf"]


def _compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "compose.yaml").read_text())["services"]


def _local(command: list[str]) -> list[str]:
    assert command[0] == "gnosi", command
    return [GNOSI, *command[1:]]


def _start_extract_worker(d: Deployment, name: str, command: list[str]) -> None:
    """As compose runs it: no data volume (an empty LOCAL_DATA of its own), no vault, web's URL."""
    secret = (Path(d.env["LOCAL_DATA"]) / "system" / "internal-token").read_text().strip()
    elsewhere = d.tmp / name
    (elsewhere / "container-data").mkdir(parents=True)
    d.start_celery(
        name, _local(command), cwd=elsewhere,
        LOCAL_DATA=str(elsewhere / "container-data"),
        GNOSI_VAULT_PATH=str(elsewhere / "no-vault"),
        GNOSI_INTERNAL_API_URL=d.api.http.base_url.__str__().rstrip("/"),
        GNOSI_INTERNAL_TOKEN=secret,
    )


def test_the_compose_topology_runs_as_local_processes(tmp_path: Path) -> None:
    services = _compose()
    assert services["web"]["command"] == ["gnosi", "serve"]  # what Deployment.start_web runs
    vault = VaultBuilder(tmp_path / "vault")
    ids = [vault.pdf_record(f"pdf-{i}", pdf) for i, pdf in enumerate(PDFS)]
    with deployment(tmp_path, vault.root, vault.table_id, GNOSI_SWEEP_INTERVAL_SECONDS="1") as d:
        d.start_web()
        d.start_celery("coordinator", _local(services["coordinator"]["command"]))
        unanswered = _healthcheck(d, services["analysis"], "--timeout", "1")
        assert unanswered.returncode == 1 and "No analysis worker" in unanswered.stderr, unanswered
        d.start_celery("analysis", _local(services["analysis"]["command"]))
        for n in range(services["extract"]["deploy"]["replicas"]):
            _start_extract_worker(d, f"extract-{n}", services["extract"]["command"])
        for name in ("coordinator", "analysis", "extract"):
            checked = _healthcheck(d, services[name])
            assert checked.returncode == 0 and checked.stdout.startswith(f"{name}-"), (name, checked)
        assert _ready(d).status_code == 200, "web never reported ready, as compose's healthcheck requires"
        notebook_id = d.api.create(ids)
        detail = d.api.wait_for_job(notebook_id)
        assert detail["job"]["state"] == "succeeded", detail["job"]
        hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure").json()["results"][0]
        assert hit["locator"]["page"] == 12
        logs = {name: (tmp_path / f"worker-{name}.log").read_text() for name in ("coordinator", "extract-0", "extract-1")}
        assert "Task ingest.activate[" in logs["coordinator"]
        assert any("Task ingest.extract[" in logs[name] for name in ("extract-0", "extract-1"))
        assert not list(tmp_path.glob("extract-*/**/*.sqlite3")), "an extract worker opened a database"
        analysis_id = d.api.post(f"/api/notebooks/{notebook_id}/analyses", {"kind": "summary"}).json()["id"]
        analysed = _analysed(d, notebook_id, analysis_id)
        assert analysed["state"] == "succeeded" and analysed["result"]["points"], analysed
        assert "Task analysis.step[" in (tmp_path / "worker-analysis.log").read_text()
        assert "Task analysis.step[" not in (tmp_path / "worker-coordinator.log").read_text()


def _healthcheck(d: Deployment, service: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    """The service's compose healthcheck command, run here as Docker runs it in the container."""
    kind, *command = service["healthcheck"]["test"]
    assert kind == "CMD", service["healthcheck"]
    return subprocess.run([*_local(command), *extra], env=d.env, cwd=REPO, capture_output=True, text=True, timeout=60)


def _ready(d: Deployment, timeout: float = 60) -> Response:
    """``GET /readyz`` until it answers 200 or ``timeout`` passes (the coordinator's first sweep)."""
    deadline = time.monotonic() + timeout
    while True:
        response = d.api.get("/readyz")
        if response.status_code == 200 or time.monotonic() > deadline:
            return response
        time.sleep(0.5)


def _analysed(d: Deployment, notebook_id: str, analysis_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (shown := d.api.get(f"/api/notebooks/{notebook_id}/analyses/{analysis_id}").json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, shown
        time.sleep(0.2)
    return shown
