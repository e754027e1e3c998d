"""A source version's job through its stages, and what each stage stored (docs/decisions/0021).

Stage outputs are rows written the moment a stage, or one unit of the ``write`` and ``check``
stages, ends; a job resumes from them. Storing an output keeps the first one (a unit written twice
by two deliveries of one message keeps the first), and "restart from stage X" deletes X's outputs
and every later stage's, keeping the earlier ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, delete, func, select
from sqlalchemy.orm import Session

from pipeline.knowledge.types import STAGES
from storage.lost_work import cancelled, lost, request_cancel  # noqa: F401 (the cancels are this module's API too)
from storage.lost_work import failed as fail  # noqa: F401 (as are the failure)
from storage.models import KnowledgeJob, KnowledgeStageOutput, Notebook, in_notebook, utcnow

ACTIVE_STATES = ("queued", "running", "cancelling")


def start(session: Session, notebook: Notebook, source_version_id: str, *, engine: str, requested_by: str | None) -> KnowledgeJob:
    job = KnowledgeJob(
        vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
        source_version_id=source_version_id, engine=engine, state="queued", stage=STAGES[0],
        requested_by=requested_by, attempts=0, warnings=[],
    )
    session.add(job)
    session.flush()
    return job


def get(session: Session, notebook: Notebook, job_id: str) -> KnowledgeJob | None:
    return session.scalar(select(KnowledgeJob).where(in_notebook(KnowledgeJob, notebook), KnowledgeJob.id == job_id))


def latest_of(session: Session, source_version_id: str) -> KnowledgeJob | None:
    return latest_of_each(session, [source_version_id]).get(source_version_id)


def latest_of_each(session: Session, source_version_ids: list[str]) -> dict[str, KnowledgeJob]:
    """Each version's latest job (the newest; of two at once, the smaller id), in one query."""
    query = select(KnowledgeJob).where(KnowledgeJob.source_version_id.in_(source_version_ids))
    latest: dict[str, KnowledgeJob] = {}
    for job in session.scalars(query.order_by(KnowledgeJob.created_at, KnowledgeJob.id.desc())):
        latest[job.source_version_id] = job
    return latest


@dataclass(frozen=True)
class Progress:
    """How far a job's units are: planned (None before the plan), written, checked, passed."""

    total: int | None = None
    written: int = 0
    checked: int = 0
    passed: int = 0


def progress(session: Session, job_ids: list[str]) -> dict[str, Progress]:
    """Each job's ``Progress``, counted in the database in one query (a list polled every second
    must not read every unit's note to count them)."""
    out = KnowledgeStageOutput
    rows = session.execute(select(
        out.job_id,
        func.max(case((out.stage == "plan", func.json_array_length(out.output, "$.units")))),
        func.sum(case((out.stage == "write", 1), else_=0)),
        func.sum(case((out.stage == "check", 1), else_=0)),
        func.sum(case((and_(out.stage == "check", func.json_array_length(out.output, "$.problems") == 0), 1), else_=0)),
    ).where(out.job_id.in_(job_ids), out.stage.in_(("plan", "write", "check"))).group_by(out.job_id))
    return {job_id: Progress(total, written, checked, passed) for job_id, total, written, checked, passed in rows}


def of_notebook(session: Session, notebook: Notebook, *, limit: int, offset: int = 0) -> list[KnowledgeJob]:
    query = select(KnowledgeJob).where(in_notebook(KnowledgeJob, notebook))
    return list(session.scalars(query.order_by(KnowledgeJob.created_at.desc(), KnowledgeJob.id).limit(limit).offset(offset)))


def active_of_versions(session: Session, version_ids: list[str]) -> list[KnowledgeJob]:
    query = select(KnowledgeJob).where(KnowledgeJob.source_version_id.in_(version_ids), KnowledgeJob.state.in_(ACTIVE_STATES))
    return list(session.scalars(query))


def output(session: Session, job_id: str, stage: str, part: str = "") -> dict[str, Any] | None:
    row = session.get(KnowledgeStageOutput, (job_id, stage, part))
    return row.output if row is not None else None


def outputs(session: Session, job_id: str, stage: str) -> dict[str, dict[str, Any]]:
    """Every stored part of ``stage``, by part key."""
    query = select(KnowledgeStageOutput).where(KnowledgeStageOutput.job_id == job_id, KnowledgeStageOutput.stage == stage)
    return {row.part: row.output for row in session.scalars(query)}


def store(session: Session, job_id: str, stage: str, produced: dict[str, Any], part: str = "") -> bool:
    """Keep what a stage (or one unit of it) produced, unless a run before this one stored it."""
    if session.get(KnowledgeStageOutput, (job_id, stage, part)) is not None:
        return False
    session.add(KnowledgeStageOutput(job_id=job_id, stage=stage, part=part, output=produced))
    session.flush()
    return True


def restart_from(session: Session, job: KnowledgeJob, stage: str) -> None:
    """Run the job again from ``stage``: that stage's outputs and every later one's go, earlier ones stay."""
    later = STAGES[STAGES.index(stage):]
    session.execute(delete(KnowledgeStageOutput).where(
        KnowledgeStageOutput.job_id == job.id, KnowledgeStageOutput.stage.in_(later)
    ))
    job.state, job.stage, job.attempts, job.warnings = "queued", stage, 0, []
    job.error_code = job.error = None
    job.started_at = job.finished_at = job.lease_expires_at = None


def claim(job: KnowledgeJob, held_for: timedelta) -> bool:
    """Whether a message may work on the job now, renewing its lease: a queued job is taken, a
    ``cancelling`` one is cancelled here (the contract's landing place for a cancel)."""
    if job.state == "cancelling":
        cancelled(job)
    if job.state == "queued":
        job.state, job.started_at = "running", utcnow()
    if job.state != "running":
        return False
    job.lease_expires_at = utcnow() + held_for
    return True


def finish(job: KnowledgeJob, warnings: list[dict[str, Any]]) -> None:
    job.state = "completed_with_warnings" if warnings else "completed"
    job.warnings, job.finished_at, job.stage = warnings, utcnow(), STAGES[-1]



def recoverable(session: Session, *, queued_before: datetime) -> list[KnowledgeJob]:
    """Jobs whose messages may be lost: queued for a while, or holding an expired lease."""
    return lost(session, KnowledgeJob, queued_before=queued_before)
