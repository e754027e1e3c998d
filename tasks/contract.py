"""The contract every ingestion step keeps, so that no failure leaves a job stuck or a state wrong.

- Before its work and before any write, a step reads the job's durable state: from
  ``notebooks.sqlite3`` on the coordinator, through the internal API on database-free extract
  workers. A job that is ``cancelling`` is cancelled there; one that is not ``running`` any more
  (cancelled, finished, or taken over after its lease was lost) stops the step, whose result
  would be ignored anyway.
- Every exception of a per-source step (``extract``, ``chunk``, ``index``) becomes that source's
  ``error`` with a bounded reason; every exception of a job step (``fingerprint``, ``activate``)
  fails the job with one, after ``GNOSI_JOB_MAX_ATTEMPTS`` attempts. Attempts are counted in the
  job and source rows, so a task that kills its worker is not resent forever either
  (``storage.ingestion.pending_orders``, ``start``).
- Only an unreachable API instance is retried as such (``InternalApiUnavailable``, Celery's own
  backoff): the step itself did nothing wrong.

The steps' work stays in ``pipeline/`` and ``storage/``; the tasks in ``tasks.ingest`` only wire
it to this contract.
"""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from app.extensions import services
from app.logs import log_ids
from pipeline.source_result import SourceResult
from pipeline.types import PipelineError
from storage import ingestion, jobs
from storage.models import Job
from tasks.internal_api import InternalApiUnavailable

log = logging.getLogger(__name__)

SourceStep = Callable[..., dict[str, Any]]
REASON_CHARS = 500


def reason(step: str, err: BaseException) -> tuple[str, str]:
    """A stable code and a bounded message for an exception a step did not expect."""
    if isinstance(err, PipelineError):
        return err.code, err.message
    return "STEP_FAILED", f"The {step} step failed: {type(err).__name__}: {err}"[:REASON_CHARS]


# What the internal API answers for a job that is not running (any request naming the job).
STOPPED = ("JOB_CANCELLED", "JOB_NOT_RUNNING")


def source_step(
    step: str, *, reads_state_itself: Callable[[dict[str, Any]], bool] = lambda incoming: False
) -> Callable[[SourceStep], SourceStep]:
    """Wrap a database-free per-source step ``run(incoming, job_id, *args) -> message``.

    ``incoming`` is the source's order or the previous step's message; a message that is already
    an outcome (an error, a cancellation, an unchanged page) travels on untouched. When
    ``reads_state_itself(incoming)``, the step's first request to the API instance answers the
    job's state (an attachment's bytes are refused for a job that is not running): the separate
    round trip is saved.
    """

    def wrap(run: SourceStep) -> SourceStep:
        @functools.wraps(run)
        def checked(incoming: dict[str, Any], job_id: str, *args: Any) -> dict[str, Any]:
            if incoming.get("status", "extracted") != "extracted":
                return incoming
            clock = StepClock(incoming.get("timings") or {}, step)
            with log_ids(job_id=job_id, source_id=incoming["source_id"]):
                outcome = _kept(step, reads_state_itself, run, incoming, job_id, *args)
            # Database-free steps cannot record how long they took: the message carries it to
            # the index step, which does (storage.step_durations).
            return {**outcome, "timings": clock.timings()}

        return checked

    return wrap


def _kept(
    step: str, reads_state_itself: Callable[[dict[str, Any]], bool], run: SourceStep,
    incoming: dict[str, Any], job_id: str, *args: Any,
) -> dict[str, Any]:
    """``run``'s message, or the source's ``cancelled`` or ``error`` outcome as the contract says."""
    source_id = incoming["source_id"]
    try:
        if not reads_state_itself(incoming) and services().internal_api.job_state(job_id) != "running":
            return SourceResult(source_id, "cancelled").to_message()
        return run(incoming, job_id, *args)
    except InternalApiUnavailable:
        raise
    except Exception as err:  # noqa: BLE001 (the contract: every failure becomes the source's error)
        if isinstance(err, PipelineError) and err.code in STOPPED:
            return SourceResult(source_id, "cancelled").to_message()
        if not isinstance(err, PipelineError):
            log.exception("the %s step failed on source %s", step, source_id)
        code, message = reason(step, err)
        return SourceResult(source_id, "error", code, message, incoming.get("meta") or {}).to_message()


class StepClock:
    """A step's start, and the durations of the source's earlier steps that its message carried."""

    def __init__(self, earlier: Mapping[str, float], step: str) -> None:
        self.earlier = dict(earlier)
        self.step = step
        self.started = time.perf_counter()

    def timings(self) -> dict[str, float]:
        """Every step's seconds so far, this one's up to now."""
        return {**self.earlier, self.step: time.perf_counter() - self.started}


def running_job(session: Session, job_id: str) -> Job | None:
    """The job when a coordinator step may work on it: a ``cancelling`` job is cancelled here,
    and None tells the step to stop (cancelled, finished, or unknown)."""
    job = jobs.get(session, job_id)
    if job is not None and job.state == "cancelling":
        ingestion.cancel(session, job)
    return job if job is not None and job.state == "running" else None


def fail_job(job_id: str, step: str, err: BaseException) -> None:
    """End a job ``failed`` with the bounded reason of ``err``."""
    code, message = reason(step, err)
    with services().db.session() as session:
        jobs.transition(session, job_id, ("running",), "failed", error=f"{code}: {message}"[:REASON_CHARS])
