"""The stages of a source note as its tasks run them (docs/decisions/0021; ``tasks.knowledge`` wires
them to Celery).

A stage's work is computed outside any transaction from what the stages before it stored, and its
output is stored in a short one (``store`` keeps the first of two runs). ``parse`` and ``plan``
run whole; ``write`` and ``check`` run per unit, in parallel messages, the check right after its
unit's note is written; ``publish`` is one transaction. Units whose checks found problems are left
out of the source note and become the job's coverage notes (``completed_with_warnings``); a unit
whose writer failed is such a unit too: a part's failure never fails the job.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.extensions import Services
from pipeline.extraction_cache import decode
from pipeline.knowledge.checks import check_draft
from pipeline.knowledge.offline import OfflineNoteWriter
from pipeline.knowledge.parse import parse
from pipeline.knowledge.plan import UnitBounds, plan_units
from pipeline.knowledge.types import STAGES, CheckResult, NoteDraft, NoteWriter, ParsedDocument, UnitPlan
from pipeline.types import PipelineError
from storage.knowledge import events, jobs, publish, sources
from storage.models import KnowledgeJob, KnowledgeSourceVersion, Notebook

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Due:
    """What a job needs next: a whole ``stage`` this message runs, or ``units`` to write and check
    (``send``: this call is the one that moved the job into the units, so its caller sends them)."""

    stage: str | None
    units: list[str]
    send: bool = False


def due(session: Session, job: KnowledgeJob) -> Due:
    """The job's next work; moves it past the unit stages once every unit has its check."""
    if job.stage in ("write", "check"):
        plans = planned(session, job)
        checked = jobs.outputs(session, job.id, "check")
        left = [plan.key for plan in plans if plan.key not in checked]
        if left:
            return Due(None, left)
        job.stage = "publish"
    return Due(job.stage, [])


def run_stage(svc: Services, session: Session, job: KnowledgeJob) -> dict[str, Any]:
    """Compute a whole stage (``parse`` or ``plan``) from the stored outputs before it; the
    caller holds no write lock (``session`` is a reader)."""
    if job.stage == "parse":
        version = session.get(KnowledgeSourceVersion, job.source_version_id)
        data = svc.extractions.read(version.extraction_key) if version is not None else None
        if data is None:
            raise PipelineError("EXTRACTION_MISSING", "The document's extraction is no longer cached: refresh the notebook, then add it again.")
        extraction = decode(data, max_bytes=svc.settings.evidence_max_bytes)
        return parse(extraction, version.label).to_dict()
    if job.stage == "plan":
        bounds = UnitBounds(svc.settings.knowledge_unit_min_chars, svc.settings.knowledge_unit_max_chars)
        return {"units": [plan.to_dict() for plan in plan_units(document(session, job), bounds)]}
    raise ValueError(f"not a whole stage: {job.stage}")


def store_stage(session: Session, job: KnowledgeJob, stage: str, produced: dict[str, Any]) -> bool:
    """Keep a whole stage's output and move the job on (a stage that finishes resets the attempts
    the sweeper counts: only a job that makes no progress runs out of them)."""
    if job.stage != stage:
        return False
    jobs.store(session, job.id, stage, produced)
    job.stage, job.attempts = STAGES[STAGES.index(stage) + 1], 0
    return True


def write(writer: NoteWriter, document: ParsedDocument, plan: UnitPlan) -> NoteDraft | CheckResult:
    """One unit's note, or the coverage note saying why it could not be written (a model that
    cannot be reached raises instead: the task waits for it rather than losing the unit)."""
    try:
        return writer.write(document, plan)
    except PipelineError as err:
        if err.code == "LLM_UNAVAILABLE":
            raise
        return CheckResult(plan.key, (f"not written: {err.message}",))


def check(writer: NoteWriter, document: ParsedDocument, plan: UnitPlan, draft: NoteDraft) -> CheckResult:
    """A written note's checks: the code's, then the judge's when the code found nothing."""
    checked = check_draft(document, plan, draft)
    if checked.ok and writer.name != OfflineNoteWriter.name:  # the offline writer has no judge
        try:
            problems = tuple(writer.judge(document, plan, draft))
        except PipelineError as err:
            if err.code == "LLM_UNAVAILABLE":
                raise
            problems = (f"not judged: {err.message}",)  # unjudged is never published
        checked = CheckResult(plan.key, problems, judged_by=writer.name)
    return checked


def unavailable(plan_key: str, err: PipelineError) -> CheckResult:
    """A unit whose model stayed down through the task's retries: a coverage note, not a failed job."""
    return CheckResult(plan_key, (f"not written: {err.message}",))


def store_written(session: Session, job: KnowledgeJob, plan_key: str, draft: NoteDraft) -> NoteDraft | None:
    """Keep a unit's note as soon as it is written, before its checks: a judge that fails or a
    worker that dies then costs the judge's request again, not the writer's too. The note the job
    keeps for the unit (another run's, when it stored first), or None when the job has left its
    units (it was restarted from an earlier stage meanwhile)."""
    if job.stage not in ("write", "check"):
        return None
    jobs.store(session, job.id, "write", draft.to_dict(), plan_key)
    return NoteDraft.from_dict(jobs.output(session, job.id, "write", plan_key))


def store_unit(session: Session, job: KnowledgeJob, plan_key: str, checked: CheckResult) -> bool:
    """Keep a unit's checks (its note, if it has one, was kept when written): the unit is done."""
    if job.stage not in ("write", "check"):
        return False
    stored = jobs.store(session, job.id, "check", {"problems": list(checked.problems), "judged_by": checked.judged_by}, plan_key)
    if stored:
        job.attempts = 0
    return stored


def publish_job(session: Session, job: KnowledgeJob, *, auto_sync: bool) -> str | None:
    """Publish the checked notes (in the caller's write transaction), unless the source was
    deleted or moved on to another version meanwhile: then the job is cancelled. The id of the
    ``note_published`` event the concepts follow (the caller sends it once this commits)."""
    if not sources.is_current(session, job.source_version_id):
        jobs.cancelled(job)
        job.error_code, job.error = "SOURCE_CHANGED", "The source was deleted or has a newer version; nothing was published."
        return None
    plans = planned(session, job)
    checks = jobs.outputs(session, job.id, "check")
    written = jobs.outputs(session, job.id, "write")
    passed = {key: NoteDraft.from_dict(written[key]) for key, check in checks.items() if not check["problems"] and key in written}
    parsed = document(session, job)
    snapshot = publish.publish(session, job, parsed, plans, passed)
    jobs.finish(job, coverage_notes(plans, checks, parsed))
    if not auto_sync:
        return None
    event, _ = events.enqueue(session, session.get(Notebook, job.notebook_id), "note_published",
                              {"source_version_id": job.source_version_id, "source_note_version_id": snapshot.id},
                              f"note_published:{snapshot.id}")
    return event.id


def coverage_notes(plans: list[UnitPlan], checks: dict[str, dict[str, Any]], parsed: ParsedDocument) -> list[dict[str, Any]]:
    """What the source note leaves out and why: each unit that failed its checks, with its pages."""
    pages_of = {block.ordinal: block.page for block in parsed.blocks}
    notes = []
    for plan in plans:
        problems = checks.get(plan.key, {}).get("problems") or []
        if problems:
            pages = sorted({pages_of[o] for o in plan.block_ordinals if o in pages_of})
            notes.append({"unit": plan.key, "title": plan.title, "pages": pages[:1] + pages[-1:] if pages else [],
                          "problems": problems[:10]})
    return notes


def document(session: Session, job: KnowledgeJob) -> ParsedDocument:
    parsed = jobs.output(session, job.id, "parse")
    if parsed is None:
        raise PipelineError("STAGE_OUTPUT_MISSING", "The parse stage's output is missing.")
    return ParsedDocument.from_dict(parsed)


def planned(session: Session, job: KnowledgeJob) -> list[UnitPlan]:
    stored = jobs.output(session, job.id, "plan")
    if stored is None:
        raise PipelineError("STAGE_OUTPUT_MISSING", "The plan stage's output is missing.")
    return [UnitPlan.from_dict(unit) for unit in stored["units"]]


def plan_of(session: Session, job: KnowledgeJob, plan_key: str) -> UnitPlan | None:
    return next((plan for plan in planned(session, job) if plan.key == plan_key), None)
