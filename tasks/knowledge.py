"""A source version's way to its source note on Celery (issue #20; the stages are
``app.services.knowledge_stages``, the decision docs/decisions/0021).

``knowledge.advance`` runs what is due: ``parse`` and ``plan`` whole, then it sends one
``knowledge.unit`` per unit (write its note, check it), each of which sends ``advance`` again when
done; the advance after the last unit's check publishes. Every message keeps the task contract: it
reads the job's durable state first (a ``cancelling`` job is cancelled there, a job that is not
``running`` stops the message), renews the lease, works outside any transaction and stores what it
produced in a short one, and ends the job ``failed`` with a bounded reason when a whole stage
raises. A killed worker loses only the message it held: the sweeper resends ``advance`` with
``resend`` for a job whose lease expired, which sends the units still without a check; finished
stages and units are never computed again.
"""
from __future__ import annotations

import logging
import time

from celery import Task, shared_task
from sqlalchemy.orm import Session

from app.extensions import services
from app.services import knowledge_concepts
from app.services import knowledge_stages as stages
from pipeline.knowledge.types import CheckResult, NoteDraft
from pipeline.types import PipelineError
from storage.knowledge import events, jobs
from storage.models import KnowledgeEvent, KnowledgeJob
from tasks.contract import reason
from tasks.ingest import lease

log = logging.getLogger(__name__)

MODEL_RETRIES = 3
MODEL_RETRY_SECONDS = 5


def start_job(job_id: str) -> None:
    advance.delay(job_id)


@shared_task(name="knowledge.advance")
def advance(job_id: str, resend: bool = False) -> str | None:
    """Run the whole stages that are due, then send the units left (all of them with ``resend``,
    else only when this message moved the job into them) or publish. Returns the stage it left
    the job in, None when the job is not running."""
    svc = services()
    try:
        while True:
            with svc.db.session() as session:
                job = _running(session, job_id)
                if job is None:
                    return None
                due = stages.due(session, job)
            if due.units:
                if resend:
                    for plan_key in due.units:
                        unit.delay(job_id, plan_key)
                return "write"
            if due.stage == "publish":
                return _publish(job_id)
            with svc.db.reader() as session:
                produced = stages.run_stage(svc, session, session.get(KnowledgeJob, job_id))
            log.info("knowledge job %s: %s computed", job_id, due.stage)
            with svc.db.session() as session:
                job = _running(session, job_id)
                if job is None or not stages.store_stage(session, job, due.stage, produced):
                    return None
                units = stages.due(session, job).units if job.stage == "write" else []
            for plan_key in units:  # this message moved the job into its units: it sends them, once
                unit.delay(job_id, plan_key)
            if units:
                return "write"
    except Exception as err:  # noqa: BLE001 (the contract: a whole stage's failure ends the job with its reason)
        _fail(job_id, "advance", err)
        return None


@shared_task(name="knowledge.unit", bind=True, max_retries=MODEL_RETRIES)
def unit(self: Task, job_id: str, plan_key: str) -> bool:
    """Write one unit's note, keep it, then check it (once: a resent unit with a stored check
    stops, and one with a stored note is only checked), then advance. A model that is down is
    waited for (``MODEL_RETRIES``) before the unit counts as not written: a coverage note, as a
    note that fails its checks."""
    svc = services()
    try:
        with svc.db.session() as session:
            job = _running(session, job_id)
            if job is None or jobs.output(session, job_id, "check", plan_key) is not None:
                return False
        with svc.db.reader() as session:
            job = session.get(KnowledgeJob, job_id)
            document, plan = stages.document(session, job), stages.plan_of(session, job, plan_key)
            written = jobs.output(session, job_id, "write", plan_key)
            engine = job.engine
        if plan is None:
            return False
        writer = svc.note_writer(engine)
        draft = NoteDraft.from_dict(written) if written is not None else stages.write(writer, document, plan)
        if written is None and isinstance(draft, NoteDraft):
            with svc.db.session() as session:  # kept at once, and the lease renewed, before the judge is asked
                job = _running(session, job_id)
                if job is None:
                    return False
                kept = stages.store_written(session, job, plan_key, draft)
            if kept is None:
                return False
            draft = kept
        checked = draft if isinstance(draft, CheckResult) else stages.check(writer, document, plan, draft)
        with svc.db.session() as session:
            job = _running(session, job_id)
            stored = bool(job and stages.store_unit(session, job, plan_key, checked))
        log.info("knowledge job %s: unit %s computed, %s", job_id, plan_key, "stored" if stored else "discarded")
    except Exception as err:  # noqa: BLE001 (the contract: every failure has its reason)
        if not (isinstance(err, PipelineError) and err.code == "LLM_UNAVAILABLE"):
            _fail(job_id, "unit", err)
            return False
        if self.request.retries < MODEL_RETRIES:
            raise self.retry(countdown=MODEL_RETRY_SECONDS * 2 ** self.request.retries) from err
        with svc.db.session() as session:  # down through every retry: the unit is left out, the job goes on
            job = _running(session, job_id)
            stored = bool(job and stages.store_unit(session, job, plan_key, stages.unavailable(plan_key, err)))
    advance.delay(job_id)
    return stored


def _publish(job_id: str) -> str | None:
    svc = services()
    with svc.db.session() as session:
        job = _running(session, job_id)
        if job is None:
            return None
        event_id = stages.publish_job(session, job, auto_sync=svc.settings.knowledge_auto_sync)
        state = job.state
    if event_id is not None:
        send_event(event_id)
    return state


def send_event(event_id: str) -> None:
    event.delay(event_id)


@shared_task(name="knowledge.event", bind=True, max_retries=MODEL_RETRIES)
def event(self: Task, event_id: str, token: str | None = None) -> str | None:
    """Process one change event (once: a done event is left as it is). Claimed, processed and
    marked done in transactions of their own, none held while an engine works
    (``knowledge_concepts``); the lease is renewed before each request to a model, and a message
    that lost the event to the sweeper's resend stops. A model that cannot be reached, or notes
    that kept changing, are tried again (``token`` lets the retry take up its own event); any
    other failure ends the event ``failed`` with its reason."""
    svc = services()
    guard = None
    try:
        with svc.db.session() as session:
            found = session.get(KnowledgeEvent, event_id)
            token = events.claim(found, lease(), token) if found is not None else None
            if token is None:
                return None
            stored = events.stored(found)
            ref = knowledge_concepts.EventRef(found.id, found.notebook_id, found.kind, dict(found.subject),
                                              tuple(stored) if stored is not None else None)
        guard = EventLease(event_id, token)
        result = knowledge_concepts.process(svc.db, ref, svc.concept_engine, guard, final=self.request.retries >= MODEL_RETRIES)
        with svc.db.session() as session:
            guard.holds(session)
            events.done(session.get(KnowledgeEvent, event_id), result)
        log.info("knowledge event %s (%s) processed: %s", event_id, ref.kind, result)
        return "done"
    except knowledge_concepts.EventLost:
        log.warning("knowledge event %s was taken over by another message; this one stops", event_id)
        return None
    except Exception as err:  # noqa: BLE001 (the contract: a failure has its reason)
        transient = isinstance(err, PipelineError) and err.code in knowledge_concepts.TRANSIENT
        if transient and guard is not None and self.request.retries < MODEL_RETRIES:
            raise self.retry(countdown=MODEL_RETRY_SECONDS * 2 ** self.request.retries,
                             kwargs={"token": guard.token}) from err
        log.exception("knowledge event %s failed", event_id)
        with svc.db.session() as session:
            failed = session.get(KnowledgeEvent, event_id)
            if failed is not None and failed.state in ("queued", "running"):
                events.fail(failed, *reason("knowledge event", err))
        return None


class EventLease:
    """The event as one message holds it (``knowledge_concepts.Guard``): its token, renewed before
    each request to an engine once a fifth of the lease has passed, so a request (bounded at 0.8
    of a lease) never outlives it; and checked in every write transaction."""

    def __init__(self, event_id: str, token: str) -> None:
        self.event_id, self.token = event_id, token
        self.renewed = time.monotonic()

    def beat(self) -> None:
        if time.monotonic() - self.renewed < lease().total_seconds() / 5:
            return
        with services().db.session() as session:
            self.holds(session)
            self.token = events.renew(session.get(KnowledgeEvent, self.event_id), lease())
        self.renewed = time.monotonic()

    def holds(self, session: Session) -> None:
        if not events.holds(session.get(KnowledgeEvent, self.event_id), self.token):
            raise knowledge_concepts.EventLost(self.event_id)


def _running(session: Session, job_id: str) -> KnowledgeJob | None:
    job = session.get(KnowledgeJob, job_id)
    if job is None or not jobs.claim(job, lease()):
        return None
    return job


def _fail(job_id: str, where: str, err: BaseException) -> None:
    log.exception("knowledge job %s: the %s failed", job_id, where)
    with services().db.session() as session:
        job = session.get(KnowledgeJob, job_id)
        if job is not None and job.state == "running":  # not one cancelled meanwhile
            jobs.fail(job, *reason(f"knowledge {where}", err))
