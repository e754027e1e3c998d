"""Durable analysis through a real Celery worker (the memory broker, the task contract): advance and
step messages plan and run every level until one summary remains, each step within the batch
bounds; a cancel lands between steps."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from pipeline.analysis.types import Focus
from steps.test_task_contract import counting, ingest, wrap
from storage import analyses
from storage.models import Analysis, AnalysisPart, Chunk, Notebook
from support.fake_openai_server import FAKE_CHUNK_ID
from tasks.analysis import MODEL_RETRIES, start_analysis

if TYPE_CHECKING:
    from steps.conftest import Instance, StepLog

ENDED = ("succeeded", "failed", "cancelled")
SMALL = {"GNOSI_ANALYSIS_BATCH_CHUNKS": "10", "GNOSI_ANALYSIS_BATCH_CHARS": "12000"}


@pytest.fixture
def analysed(launch: Callable[..., Instance]) -> tuple[Instance, str]:
    instance = launch(**SMALL)
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    return instance, notebook_id


def _start(instance: Instance, notebook_id: str, engine: str = "extractive") -> str:
    def create(session: Any) -> str:
        return analyses.start(session, session.get(Notebook, notebook_id), requested_by=None, focus=Focus(),
                              source_ids=[], engine=engine).id

    analysis_id = instance.write(create)
    start_analysis(analysis_id)
    return analysis_id


def _wait(instance: Instance, analysis_id: str, timeout: float = 60) -> Analysis:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        analysis = instance.read(lambda session: session.get(Analysis, analysis_id))
        if analysis.state in ENDED:
            return analysis
        time.sleep(0.05)
    raise TimeoutError(f"analysis {analysis_id} still {analysis.state}")


def test_an_analysis_runs_every_level_on_the_worker_within_its_bounds(analysed: tuple[Instance, str]) -> None:
    instance, notebook_id = analysed
    analysis = _wait(instance, _start(instance, notebook_id))
    assert analysis.state == "succeeded", analysis.error
    parts = instance.read(lambda s: list(s.scalars(select(AnalysisPart).where(AnalysisPart.analysis_id == analysis.id))))
    assert len(analysis.levels) >= 2 and analysis.levels[-1] == 1 and len(parts) == sum(analysis.levels)
    assert all(p.points is not None and p.input_items <= 10 and p.input_chars <= 12_000 for p in parts)
    assert {point["resource_id"] for point in analysis.result["points"]} == {"dmca", "naacl"}


def test_the_model_engine_runs_every_level_and_no_invented_citation_reaches_any_step(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    """The endpoint answers 503 once: the step waits for it (a retry), the analysis goes on."""
    url, log = fake_server([
        {"status": 503},
        {"text": "- {sentence:1} [1]\n- {sentence:2} [2][{fake_chunk}]\n- A claim the model made up [41]"},
    ])
    instance = launch(**SMALL, GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    analysis = _wait(instance, _start(instance, notebook_id, "openai-compatible/fake-model"))
    assert analysis.state == "succeeded", analysis.error
    parts = instance.read(lambda s: list(s.scalars(select(AnalysisPart).where(AnalysisPart.analysis_id == analysis.id))))
    assert len(log.read_text().splitlines()) == 1 + len(parts) == 1 + sum(analysis.levels) and len(analysis.levels) >= 2
    stored = [point for part in parts for point in part.points] + analysis.result["points"]
    assert all(len(point["chunk_ids"]) == len(point["quotes"]) >= 1 for point in stored)
    assert not any(FAKE_CHUNK_ID in point["chunk_ids"] or "made up" in point["text"] for point in stored)
    chunks = instance.read(lambda s: {c.chunk_id: c.text for c in s.scalars(select(Chunk))})
    assert all(quote in chunks[chunk] for point in stored for chunk, quote in zip(point["chunk_ids"], point["quotes"]))


def test_a_model_that_stays_down_fails_the_analysis_after_its_retries_and_another_model_is_never_used(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tasks.analysis.MODEL_RETRY_SECONDS", 0)
    url, log = fake_server([{"status": 503}])
    instance = launch(**SMALL, GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    down = _wait(instance, _start(instance, notebook_id, "openai-compatible/fake-model"))
    assert (down.state, down.error_code) == ("failed", "LLM_UNAVAILABLE")
    assert len(log.read_text().splitlines()) >= 1 + MODEL_RETRIES, "the step was retried before the analysis failed"
    other = _wait(instance, _start(instance, notebook_id, "openai-compatible/a-model-since-replaced"))
    assert (other.state, other.error_code) == ("failed", "LLM_NOT_CONFIGURED")


def test_a_cancel_lands_between_steps(
    analysed: tuple[Instance, str], steps: StepLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance, notebook_id = analysed
    ran: list[tuple[Any, ...]] = []
    wrap(monkeypatch, "tasks.analysis.summarise", counting(ran))
    analysis_id = instance.write(
        lambda session: analyses.start(session, session.get(Notebook, notebook_id), requested_by=None, focus=Focus(),
                                       source_ids=[], engine="extractive").id
    )
    # Cancelled as the first step is about to run (the advance that planned the map level is done).
    steps.before_next("analysis.step", lambda: instance.write(lambda session: analyses.request_cancel(session.get(Analysis, analysis_id))))
    start_analysis(analysis_id)
    analysis = _wait(instance, analysis_id)
    assert analysis.state == "cancelled" and ran == [], f"{len(ran)} steps ran after the cancel"
    assert analysis.levels and analysis.levels[0] > 1, "the map level was planned before the cancel"
