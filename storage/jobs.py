"""Durable job rows: the only truth about background work (brokers only carry ids).

State changes are compare-and-set ``UPDATE … WHERE state = …`` statements, so a late or duplicated
task can never overwrite a state another actor already moved on (a finished task cannot turn a
``cancelled`` job back into ``succeeded``).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from storage.lost_work import lost
from storage.models import Job, Notebook, in_notebook, utcnow

INGEST = "notebook_ingest"
ACTIVE_STATES = ("queued", "running", "cancelling")


@dataclass(frozen=True)
class IngestRequest:
    job: Job
    outcome: str  # "queued" (dispatch it) or "coalesced" (an existing job covers it)


def _jobs_of(notebook: Notebook):  # type: ignore[no-untyped-def]
    return (
        select(Job)
        .where(
            in_notebook(Job, notebook),
        )
        .order_by(Job.created_at.desc())
        .limit(1)
    )


def latest_job(session: Session, notebook: Notebook) -> Job | None:
    return session.scalar(_jobs_of(notebook))


def active_job(session: Session, notebook: Notebook) -> Job | None:
    return session.scalar(_jobs_of(notebook).where(Job.state.in_(ACTIVE_STATES)))


def request_ingest(
    session: Session, notebook: Notebook, *, requested_by: str | None, params: dict[str, Any]
) -> IngestRequest:
    """Queue an ingestion, or fold the request into the job that is already queued/running.

    A queued job will see the current sources when it starts, so it absorbs the request; a
    running job gets ``rerun_requested`` and enqueues exactly one follow-up when it ends.
    """
    current = active_job(session, notebook)
    if current is not None and current.state == "queued":
        current.params = _merge_params(current.params, params)
        return IngestRequest(current, "coalesced")
    if current is not None:
        current.rerun_requested = True
        current.params = _merge_params(current.params, {"rerun": params})
        return IngestRequest(current, "coalesced")
    job = Job(
        vault_hash=notebook.vault_hash,
        workspace_id=notebook.workspace_id,
        notebook_id=notebook.id,
        kind=INGEST,
        requested_by=requested_by,
        params=params,
    )
    session.add(job)
    session.flush()
    return IngestRequest(job, "queued")


def absorbing_job(session: Session, notebook: Notebook, params: dict[str, Any]) -> Job | None:
    """The queued job that would absorb a request with ``params`` without changing: the request
    then needs no write (a queued job plans the sources it finds when it starts, which is later)."""
    current = active_job(session, notebook)
    if current is not None and current.state == "queued" and _merge_params(current.params, params) == current.params:
        return current
    return None


def _merge_params(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    merged = dict(old)
    for key, value in new.items():
        if isinstance(value, list):
            merged[key] = sorted(set(merged.get(key, [])) | set(value))
        elif isinstance(value, dict):
            merged[key] = _merge_params(merged.get(key, {}), value)
        else:
            merged[key] = value
    return merged


def claim(session: Session, job_id: str, owner: str, lease: timedelta) -> Job | None:
    """Take a queued job (or one whose lease expired) for ``owner``; None if someone else has it."""
    now = utcnow()
    claimed = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            (Job.state == "queued") | ((Job.state == "running") & (Job.lease_expires_at < now)),
        )
        .values(
            state="running",
            lease_owner=owner,
            lease_expires_at=now + lease,
            started_at=now,
            attempts=Job.attempts + 1,
        )
    ).rowcount
    return session.get(Job, job_id) if claimed else None


def release(session: Session, job_id: str) -> None:
    """End a running job's lease now, so that the retry of its failed step can claim it again."""
    session.execute(update(Job).where(Job.id == job_id, Job.state == "running").values(lease_expires_at=utcnow()))


def heartbeat(session: Session, job_id: str, lease: timedelta) -> None:
    """Extend a live lease. One that ended stays ended: the job is the sweeper's to recover
    (``renew``). A late result (its message outlived a killed worker) that revived it would hide
    the loss of the messages that worker had taken, until the new lease ran out."""
    now = utcnow()
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state.in_(("running", "cancelling")), Job.lease_expires_at >= now)
        .values(lease_expires_at=now + lease)
    )


def renew(session: Session, job_id: str, lease: timedelta) -> None:
    """Give a job whose lease ended a new one: recovery has resent its lost work. What the job
    said it was doing ("OCR: page 5 (4 of 9)") went with the worker that was doing it."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state.in_(("running", "cancelling")))
        .values(lease_expires_at=utcnow() + lease, activity=None)
    )


def expire_leases_of(session: Session, owner_prefix: str) -> int:
    """End now the leases of owners known to be dead (names starting with ``owner_prefix``), so the
    sweeper re-sends their work at once instead of after up to a whole lease.

    Only for owners the caller has proof of death for (app/serve.py: the embedded worker, whose
    lock it holds); a lease another owner took meanwhile is left alone (compare-and-set on owner).
    """
    now = utcnow()
    return session.execute(
        update(Job)
        .where(
            Job.state.in_(("running", "cancelling")),
            Job.lease_owner.startswith(owner_prefix, autoescape=True),
            Job.lease_expires_at > now,
        )
        .values(lease_expires_at=now)
    ).rowcount


def request_cancel(session: Session, notebook: Notebook) -> Job | None:
    """Cooperative cancel: a queued job ends at once, a running one moves to ``cancelling``."""
    job = active_job(session, notebook)
    if job is None:
        return None
    if not transition(session, job.id, ("queued",), "cancelled"):
        transition(session, job.id, ("running",), "cancelling", rerun_requested=False)
    session.refresh(job)
    return job


def recoverable(session: Session, *, queued_before: datetime) -> list[Job]:
    """Jobs whose messages may be lost: queued for a while, or holding an expired lease."""
    return lost(session, Job, queued_before=queued_before)


def transition(session: Session, job_id: str, from_states: tuple[str, ...], to_state: str, **values: Any) -> bool:
    """Compare-and-set a job's state; returns whether this caller won the transition."""
    if to_state in ("succeeded", "failed", "cancelled"):
        values.setdefault("finished_at", utcnow())
        values.setdefault("current_resource_id", None)
        values.setdefault("activity", None)
    return bool(
        session.execute(
            update(Job)
            .where(Job.id == job_id, Job.state.in_(from_states))
            .values(state=to_state, **values)
        ).rowcount
    )


def get(session: Session, job_id: str) -> Job | None:
    return session.get(Job, job_id)


def unfinished_ids(session: Session, job_ids: list[str]) -> set[str]:
    """Which of ``job_ids`` are still queued, running or cancelling (the rest may be cleaned up)."""
    if not job_ids:
        return set()
    return set(session.scalars(select(Job.id).where(Job.id.in_(job_ids), Job.state.in_(ACTIVE_STATES))))
