"""Re-dispatch durable work whose messages may be lost (worker killed, broker restarted).

The job rows are the truth; this turns them back into messages. Every re-sent message is safe to
receive twice: claims are compare-and-set, and results for finished sources are ignored.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from sqlalchemy.orm import Session

from app.extensions import services

from storage import analyses, heartbeats, ingestion, jobs
from storage.knowledge import events as knowledge_events
from storage.knowledge import jobs as knowledge_jobs
from storage.broker_cleanup import purge_consumed
from storage.ingestion import ExtractOrder
from storage.models import Analysis, KnowledgeEvent, KnowledgeJob, Notebook, utcnow
from tasks.analysis import advance as advance_analysis
from tasks.knowledge import advance as advance_knowledge
from tasks.knowledge import send_event
from tasks.ingest import dispatch_ingest, lease, send_orders, write_vectors

log = logging.getLogger(__name__)
Leased = Analysis | KnowledgeJob | KnowledgeEvent


@shared_task(name="sweep_jobs")
def sweep_jobs(lost_before: str | None = None) -> int:
    """Re-send lost work. A queued job is taken for lost after a whole lease (its message may just
    be waiting for a busy worker), or if it was queued before ``lost_before`` (ISO time): the start
    of an embedded instance sends that when it knows its previous worker died, and with it any
    message that worker had taken off the broker (app/serve.py)."""
    svc = services()
    queued_before = utcnow() - lease()
    if lost_before is not None:
        queued_before = max(queued_before, datetime.fromisoformat(lost_before))
    with svc.db.session() as session:
        heartbeats.beat(session, heartbeats.COORDINATOR)  # GET /readyz: beat, broker and a coordinator work
    with svc.db.reader() as session:
        lost_found = anything_lost(session, queued_before)
    lost = Lost()
    if lost_found:
        with svc.db.session() as session:
            lost = _take_back(session, queued_before, svc.settings.job_max_attempts)
    for analysis_id in lost.analyses:
        advance_analysis.delay(analysis_id, resend=True)
    for job_id in lost.knowledge:
        advance_knowledge.delay(job_id, resend=True)
    for event_id in lost.events:
        send_event(event_id)
    for job_id, pending in lost.orders.items():
        send_orders(job_id, pending)  # none left: only the activation was lost
    for job_id in lost.restart:
        dispatch_ingest(job_id)
    if svc.settings.embedded:
        purge_consumed(svc.settings.embedded_broker_path)
    try:
        _discard_finished_packs()
        with svc.db.reader() as session:
            svc.extractions.delete_orphans(session)
            svc.vector_files.delete_unreferenced(session)
            wanting = svc.vector_files.wanting(session, svc.embedder)
        for revision_id in wanting:
            write_vectors.delay(revision_id)
    except OSError:  # a broken disk must not stop the recovery above from running again
        log.exception("could not clean the evidence spool, the extraction cache or the vector files")
    return lost.count


@dataclass
class Lost:
    """What a sweep sends again: extract orders of running jobs, jobs to restart, and the ids of
    analyses, knowledge jobs and knowledge events."""

    orders: dict[str, list[ExtractOrder]] = field(default_factory=dict)
    restart: list[str] = field(default_factory=list)
    analyses: list[str] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.orders) + len(self.restart) + len(self.analyses) + len(self.knowledge) + len(self.events)


def anything_lost(session: Session, queued_before: datetime) -> bool:
    """Whether any work looks lost, read without the write lock: a sweep that held the lock while
    it looked stopped any web process whose write met it, since SQLite's busy handler sleeps in C
    (one held it for 41 ms under bench/chat_latency.py's ten clients). Each work table's state
    index keeps the look to the unfinished rows: 1.5 ms with 100,000 finished jobs and as many
    analyses, 28 ms without (bench/sweep_scan.py)."""
    return any(
        recoverable(session, queued_before=queued_before)
        for recoverable in (jobs.recoverable, analyses.recoverable, knowledge_jobs.recoverable,
                            knowledge_events.recoverable)
    )


def _take_back(session: Session, queued_before: datetime, attempts: int) -> Lost:
    """Under the write lock: the lost work as found now, renewed, cancelled or failed as it must be
    (``attempts``: GNOSI_JOB_MAX_ATTEMPTS)."""
    lost = Lost()
    for job in jobs.recoverable(session, queued_before=queued_before):
        if job.state == "cancelling":
            ingestion.cancel(session, job)
        elif job.state == "running" and job.revision_id is not None:
            jobs.renew(session, job.id, lease())
            notebook = session.get(Notebook, job.notebook_id)
            lost.orders[job.id] = ingestion.pending_orders(session, job, notebook, attempts)
        else:
            lost.restart.append(job.id)
    held_for = lease()
    lost.analyses = _recover(analyses.recoverable(session, queued_before=queued_before), analyses.cancelled, analyses.fail,
                             attempts, held_for)
    lost.knowledge = _recover(knowledge_jobs.recoverable(session, queued_before=queued_before), knowledge_jobs.cancelled,
                              knowledge_jobs.fail, attempts, held_for)
    lost.events = _recover(knowledge_events.recoverable(session, queued_before=queued_before), None, knowledge_events.fail,
                           attempts, held_for, taken_back=knowledge_events.take_back)
    return lost


def _recover(
    found: Sequence[Leased], cancelled: Callable[[Any], None] | None, fail: Callable[[Any, str, str], None], max_attempts: int,
    held_for: timedelta, *, taken_back: Callable[[Any], None] = lambda row: None,
) -> list[str]:
    """Analyses, knowledge jobs or events to send again (every step or unit still without a result
    is resent; ``taken_back`` lets the resent message take over one that a worker held); one resent
    ``max_attempts`` times ends: whatever kills its workers would kill the next one too. A step or
    unit that finishes sets the attempts back to 0."""
    resend = []
    for row in found:
        if row.state == "cancelling" and cancelled is not None:  # its worker is gone: nothing is left to stop
            cancelled(row)
            continue
        row.attempts += 1
        row.lease_expires_at = utcnow() + held_for
        if row.attempts > max_attempts:
            fail(row, ingestion.ATTEMPTS_EXHAUSTED, ingestion.attempts_exhausted(max_attempts))
        else:
            taken_back(row)
            resend.append(row.id)
    return resend


def _discard_finished_packs() -> None:
    """Evidence packs of ended jobs (uploads whose store message was lost or ignored)."""
    svc = services()
    spooled = svc.spool.job_ids()
    with svc.db.reader() as session:
        keep = jobs.unfinished_ids(session, spooled)
    for job_id in set(spooled) - keep:
        svc.spool.discard_job(job_id)
