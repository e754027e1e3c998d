"""The contract of the five ingestion steps (tasks/contract.py), with the real chain run by Celery's
embedded worker in this process (see conftest.py): routing, a full ingestion, re-chunking from the
extraction cache, cancellation seen by every step, failures that end a source or a job instead of
leaving it stuck, and lease recovery that gives up."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from storage import jobs
from storage.ingestion import ATTEMPTS_EXHAUSTED
from storage.models import Job, Notebook, Revision, Source, utcnow

if TYPE_CHECKING:  # the fixtures' types; a conftest is not imported by tests
    from steps.conftest import Instance, Lab, StepLog

STEPS = ("fingerprint", "extract", "chunk", "index", "activate")
BOTH = ["dmca", "naacl"]
# The work of each database-free step, which a cancelled job must not get.
# The work a source step must not do for a cancelled job. Asking for an attachment's bytes is how
# the extract step reads the job's state (they are refused for a job that is not running).
SOURCE_WORK = {"extract": "pipeline.source_processing.extract_read", "chunk": "pipeline.source_processing.chunk_extraction"}
Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


def wrap(monkeypatch: pytest.MonkeyPatch, target: str, make: Wrapper) -> None:
    """Replace the function at dotted ``target`` by ``make(original)`` for this test."""
    module, name = target.rsplit(".", 1)
    monkeypatch.setattr(target, make(getattr(importlib.import_module(module), name)))


def counting(calls: list[tuple[Any, ...]]) -> Wrapper:
    """Record each call's arguments in ``calls``, then run the original."""

    def make(real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            return real(*args, **kwargs)

        return counted

    return make


def calling_first(action: Callable[[], None]) -> Wrapper:
    """Run ``action`` in the caller's thread (the worker's), then the original."""

    def make(real: Callable[..., Any]) -> Callable[..., Any]:
        def preceded(*args: Any, **kwargs: Any) -> Any:
            action()
            return real(*args, **kwargs)

        return preceded

    return make


def raising_once(err: Exception, *, on_call: int = 1) -> Wrapper:
    """Call number ``on_call`` raises ``err``, the others run the original (so the step's own
    error path, which may call the same function again, works)."""

    def make(real: Callable[..., Any]) -> Callable[..., Any]:
        calls: list[bool] = []

        def flaky(*args: Any, **kwargs: Any) -> Any:
            calls.append(True)
            if len(calls) == on_call:
                raise err
            return real(*args, **kwargs)

        return flaky

    return make


def ingest(instance: Instance, resource_ids: list[str] = BOTH, timeout: float | None = None) -> tuple[str, Job]:
    """Create a notebook through the API and wait for its first job to end (``timeout``: longer
    than the harness's deadline)."""
    notebook_id, job_id = instance.create_notebook(resource_ids)
    return notebook_id, instance.wait_job_end(job_id) if timeout is None else instance.wait_job_end(job_id, timeout)


def open_notebook(instance: Instance, notebook_id: str) -> str:
    """``GET /api/notebooks/{id}?open=1``: what the opening's change check decided."""
    response = instance.call("GET", f"/api/notebooks/{notebook_id}?open=1")
    assert response.status_code == 200, response.json
    return response.json["ingest"]


def cancel_active_jobs(instance: Instance) -> list[str]:
    """Ask to cancel every notebook's active job, as the cancel endpoint does; the states the jobs
    moved to (``cancelling`` for a running one)."""

    def change(session: Any) -> list[str]:
        cancelled = [jobs.request_cancel(session, nb) for nb in session.scalars(select(Notebook))]
        return [job.state for job in cancelled if job is not None]

    return instance.write(change)


def test_steps_are_registered_and_routed(instance: Instance) -> None:
    """Extract workers consume only ``extract`` and ``chunk`` and hold no database: only the two
    database-free steps may be routed there."""
    assert {f"ingest.{step}" for step in STEPS} <= set(instance.celery.tasks)
    route = instance.celery.amqp.router.route
    queues = {step: route({}, f"ingest.{step}")["queue"].name for step in STEPS}
    assert queues == {
        "fingerprint": "coordinator", "extract": "extract", "chunk": "chunk",
        "index": "coordinator", "activate": "coordinator",
    }


def test_two_pdfs_ingest_end_to_end(instance: Instance) -> None:
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    assert instance.notebook(notebook_id).active_revision_id == job.revision_id
    sources = instance.sources(job.revision_id)
    assert sorted(s.resource_id for s in sources) == BOTH
    assert [s.state for s in sources] == ["available", "available"]
    assert all(instance.chunk_count(job.revision_id, s.id) > 0 for s in sources)


def test_a_worker_chunks_each_source_before_it_extracts_the_next(
    lab: Lab, launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk step has its own queue. In the extract queue every chunk message waited behind
    every extract order sent before it: nothing was indexed until all sources were extracted."""
    lab.vault.pdf_record("tracemonkey", "tracemonkey.pdf", title="Trace trees")
    steps: list[str] = []
    for step, target in SOURCE_WORK.items():
        wrap(monkeypatch, target, calling_first(lambda step=step: steps.append(step)))
    _, job = ingest(launch(), [*BOTH, "tracemonkey"])
    assert job.state == "succeeded", job.error
    assert steps == ["extract", "chunk"] * 3


def test_a_new_chunking_recipe_rechunks_without_extracting(
    launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extraction is the expensive step; a recipe change must chunk again from the cache."""
    extractions: list[tuple[Any, ...]] = []
    wrap(monkeypatch, "pipeline.source_processing.extract_read", counting(extractions))
    first = launch()
    notebook_id, job = ingest(first)
    assert job.state == "succeeded", job.error
    assert len(extractions) == 2  # the counter sees the real extractions
    chunks_before = first.chunk_count(job.revision_id)

    second = launch(GNOSI_CHUNK_MAX_CHARS="600")
    response = second.call("POST", f"/api/notebooks/{notebook_id}/refresh")
    assert response.status_code == 202 and response.json["ingest"] == "queued", response.json
    refreshed = second.wait_job_end(response.json["job"]["id"])

    assert refreshed.state == "succeeded", refreshed.error
    assert len(extractions) == 2, "the refresh extracted again instead of chunking the cached extraction"
    assert second.notebook(notebook_id).active_revision_id == refreshed.revision_id != job.revision_id
    sources = second.sources(refreshed.revision_id)
    assert [s.state for s in sources] == ["available", "available"]
    assert all(s.chunking.startswith("chunks 600/") for s in sources), [s.chunking for s in sources]
    assert second.chunk_count(refreshed.revision_id) > chunks_before


@pytest.mark.parametrize("step", STEPS)
def test_each_step_observes_a_cancel(
    instance: Instance, steps: StepLog, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The cancel lands just before ``step`` runs. A queued job is cancelled by the request alone,
    so for the fingerprint step it lands after the claim, while the step plans its sources."""
    seen: list[str] = []
    work: list[tuple[Any, ...]] = []  # what a source step did after the cancel: nothing, it must stop first
    if step in SOURCE_WORK:
        wrap(monkeypatch, SOURCE_WORK[step], counting(work))

    def cancel() -> None:
        seen.extend(cancel_active_jobs(instance))

    if step == "fingerprint":
        wrap(monkeypatch, "tasks.ingest.plan", calling_first(cancel))
    else:
        steps.before_next(f"ingest.{step}", cancel)
    notebook_id, job = ingest(instance)
    if step != "fingerprint":  # let both sources' chains drain before reading what they did
        instance.wait_for(lambda: len(steps.returned("ingest.index")) == 2, "both sources' index steps")

    assert seen == ["cancelling"], "the cancel did not land on a running job"
    assert job.state == "cancelled", (job.state, job.error)
    assert instance.notebook(notebook_id).active_revision_id is None
    if step == "fingerprint":
        assert job.revision_id is None, "a draft was started for a cancelled job"
    else:
        assert instance.read(lambda s: s.get(Revision, job.revision_id)).state == "cancelled"
    if step in SOURCE_WORK:
        assert [m["status"] for m in steps.returned(f"ingest.{step}")] == ["cancelled", "cancelled"]
        assert work == [], f"the {step} step worked for a cancelled job"
    if step in ("extract", "chunk", "index"):
        assert instance.chunk_count(job.revision_id) == 0, "a cancelled job stored chunks"


@pytest.mark.parametrize(
    ("step", "target"),
    [
        ("extract", "pipeline.source_processing.extract_read"),
        ("chunk", "pipeline.source_processing.chunk_extraction"),
        ("index", "storage.ingestion.record_result"),
    ],
)
def test_a_step_that_raises_fails_its_source_not_the_job(
    instance: Instance, monkeypatch: pytest.MonkeyPatch, step: str, target: str
) -> None:
    wrap(monkeypatch, target, raising_once(RuntimeError("boom")))
    notebook_id, job = ingest(instance)

    assert job.state == "succeeded", job.error
    sources = sorted(instance.sources(job.revision_id), key=lambda s: s.state)
    assert [s.state for s in sources] == ["available", "error"]
    failed = sources[1]
    assert (failed.error_code, failed.error) == ("STEP_FAILED", f"The {step} step failed: RuntimeError: boom")
    assert instance.notebook(notebook_id).active_revision_id == job.revision_id


@pytest.mark.parametrize("max_attempts", [3, 5])
def test_a_fingerprint_that_always_crashes_fails_the_job_after_max_attempts(
    launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch, max_attempts: int
) -> None:
    """Each crash is retried by Celery after 2**attempts s (up to 60) until GNOSI_JOB_MAX_ATTEMPTS;
    5 is the default. The countdowns asked for are recorded and the waits shortened: what is under
    test is that the step's own retries reach the last attempt (no sweeper runs here)."""
    instance = launch(GNOSI_JOB_MAX_ATTEMPTS=str(max_attempts))
    plans: list[tuple[Any, ...]] = []
    countdowns: list[float] = []

    def crash(*args: Any, **kwargs: Any) -> None:
        plans.append(args)
        raise RuntimeError("planner down")

    fingerprint = instance.celery.tasks["ingest.fingerprint"]
    real_retry = fingerprint.retry

    def quick_retry(*args: Any, countdown: float, **kwargs: Any) -> Any:
        countdowns.append(countdown)
        return real_retry(*args, countdown=0.05, **kwargs)

    monkeypatch.setattr("tasks.ingest.plan", crash)
    monkeypatch.setattr(fingerprint, "retry", quick_retry)
    _, job_id = instance.create_notebook(BOTH)
    job = instance.wait_job_end(job_id, timeout=20)

    assert (job.state, job.attempts, len(plans)) == ("failed", max_attempts, max_attempts), job.error
    assert countdowns == [2 ** attempt for attempt in range(1, max_attempts)]
    assert job.error.startswith("STEP_FAILED") and "RuntimeError: planner down" in job.error, job.error


def test_lease_recovery_gives_up_on_a_source_sent_max_attempts_times(
    instance: Instance, steps: StepLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first source's index message is lost (its worker died); once that source was sent
    GNOSI_JOB_MAX_ATTEMPTS times, the sweeper must end it in error and let the job activate,
    not send it to the workers again."""
    index = instance.celery.tasks["ingest.index"]
    real_index = index.run
    lost: list[str] = []

    def lose_first(message: dict[str, Any], job_id: str) -> None:
        if not lost:
            lost.append(message["source_id"])
            return None
        return real_index(message, job_id)

    monkeypatch.setattr(index, "run", lose_first)
    notebook_id, job_id = instance.create_notebook(BOTH)
    instance.wait_for(lambda: lost and instance.job(job_id).done == 1, "one source stored, the other's message lost")

    def exhaust(session: Any) -> None:
        session.get(Source, lost[0]).attempts = instance.settings.job_max_attempts
        session.get(Job, job_id).lease_expires_at = utcnow() - timedelta(seconds=1)

    instance.write(exhaust)
    ran_before = len(steps.ran)
    assert instance.celery.tasks["sweep_jobs"]() == 1
    job = instance.wait_job_end(job_id)

    assert job.state == "succeeded", job.error
    given_up = instance.read(lambda s: s.get(Source, lost[0]))
    assert (given_up.state, given_up.error_code) == ("error", ATTEMPTS_EXHAUSTED)
    assert instance.notebook(notebook_id).active_revision_id == job.revision_id
    assert "ingest.extract" not in [name for name, _ in steps.ran[ran_before:]]


def test_a_job_whose_worker_died_at_every_attempt_ends_failed(
    instance: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed while fingerprinting raises nothing: its job stays running until its lease
    expires and the sweeper sends it again, which counts an attempt. Past GNOSI_JOB_MAX_ATTEMPTS
    the next claim ends the job failed with the reason instead of planning once more."""
    fingerprint = instance.celery.tasks["ingest.fingerprint"]
    real_fingerprint = fingerprint.run
    dropped: list[str] = []

    def die_once(job_id: str) -> None:
        if not dropped:
            dropped.append(job_id)
            return None
        return real_fingerprint(job_id)

    monkeypatch.setattr(fingerprint, "run", die_once)
    _, job_id = instance.create_notebook(BOTH)
    instance.wait_for(lambda: dropped, "the first fingerprint message to be taken")

    def died_every_time(session: Any) -> None:
        job = session.get(Job, job_id)
        job.state, job.attempts = "running", instance.settings.job_max_attempts
        job.lease_expires_at = utcnow() - timedelta(seconds=1)

    instance.write(died_every_time)
    assert instance.celery.tasks["sweep_jobs"]() == 1
    job = instance.wait_job_end(job_id)

    assert (job.state, job.attempts) == ("failed", instance.settings.job_max_attempts + 1)
    assert job.error.startswith(f"{ATTEMPTS_EXHAUSTED}: ") and "GNOSI_JOB_MAX_ATTEMPTS" in job.error, job.error
