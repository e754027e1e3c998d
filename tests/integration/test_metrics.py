"""`GET /metrics` and JSON logs on a real deployment (`gnosi serve`: gunicorn with
prometheus_client's multiprocess directory; Redis and a worker process): the text parses with
Prometheus's own parser and counts every step of a real job once per source, the job's state, a
chat turn's first event and end, searches and the queues' waiting messages; with
``GNOSI_LOG_FORMAT=json`` the lines of the app, its tasks and gunicorn's access log are JSON
objects carrying the request, task, job and source they are about."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.live import deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def samples(base_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` (no sign-in) by name and sorted labels."""
    response = httpx.get(base_url + "/metrics", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_count_a_real_jobs_steps_and_a_chat_turn(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    vault.pdf_record("trace", "tracemonkey.pdf")
    with deployment(tmp_path, vault.root, vault.table_id, GNOSI_LOG_FORMAT="json") as d:
        d.start_web()
        d.start_worker("main", beat=True)
        base_url = str(d.api.http.base_url).rstrip("/")
        before = samples(base_url)
        assert before[("gnosi_ingest_step_seconds_count", (("step", "extract"),))] == 0
        notebook_id = d.api.create(["dmca", "trace"])
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        status, events = d.api.chat({"notebook_id": notebook_id, "message": "What is notice and takedown?"})
        assert status == 200 and events[-1][0] == "done"
        assert d.api.get(f"/api/notebooks/{notebook_id}/search", q="trace trees").status_code == 200

        found = samples(base_url)

    def count(name: str, **labels: str) -> float:
        return found[(name, tuple(sorted(labels.items())))]

    for step in ("extract", "chunk", "index"):
        assert count("gnosi_ingest_step_seconds_count", step=step) == 2, step
        assert count("gnosi_ingest_step_seconds_bucket", step=step, le="+Inf") == 2, step
        assert count("gnosi_ingest_step_seconds_sum", step=step) > 0, step
    assert count("gnosi_ingest_step_seconds_count", step="fingerprint") == 1
    assert count("gnosi_ingest_step_seconds_count", step="activate") == 1
    assert count("gnosi_jobs", state="succeeded") == 1
    assert count("gnosi_jobs", state="running") == 0
    assert count("gnosi_chat_first_event_seconds_count") == 1
    assert count("gnosi_chat_done_seconds_count") == 1
    assert count("gnosi_chat_first_event_seconds_sum") <= count("gnosi_chat_done_seconds_sum")
    assert count("gnosi_search_seconds_count") >= 2  # the chat turn's search and the API's
    assert count("gnosi_broker_up") == 1
    assert {queue for (name, labels) in found if name == "gnosi_queue_messages" for _, queue in labels} == {
        "coordinator", "extract", "chunk", "analysis",
    }
    assert count("gnosi_websockets_open") == 0

    worker_lines = json_lines(tmp_path / "worker-main.log")
    extracted = [line for line in worker_lines if line["message"].startswith("extractor read source")]
    assert len(extracted) == 2
    assert all(line["task_name"] == "ingest.extract" and line["task_id"] and line["job_id"] for line in extracted)
    assert {line["source_id"] for line in extracted} == {line["message"].split()[3].rstrip(":") for line in extracted}
    web_lines = json_lines(tmp_path / "serve.log")
    queued = next(line for line in web_lines if line["message"].startswith("ingestion queued"))
    assert queued["job_id"] == extracted[0]["job_id"] and queued["level"] == "INFO"
    access = [line for line in web_lines if line["logger"] == "gunicorn.access"]
    assert any(f"request_id={queued['request_id']}" in line["message"] for line in access)


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The log's JSON lines (gunicorn's master and Celery's start-up banner write their own)."""
    return [json.loads(raw) for raw in path.read_text().splitlines() if raw.startswith("{")]
