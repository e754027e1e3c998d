"""Durable hierarchical analysis on Celery (issue #16; the steps are ``app.services.analysis_steps``).

``analysis.advance`` plans what is due and sends one ``analysis.step`` per step of a level it has
just planned; each step stores its summary in notebooks.sqlite3 and sends ``analysis.advance``
again. The advance after a level's last step plans the next level (a compare-and-set on the
analysis's levels, in one write transaction), so exactly one sends its steps; no chord, no result
backend: the broker carries ids only, every intermediate result is in the database.

Every message reads the analysis's durable state first: a ``cancelling`` analysis is cancelled
there, and one that is not ``running`` stops the message. A worker that dies loses only the steps
it held: their messages come back (acks_late), or the sweeper finds the expired lease and sends
``advance`` with ``resend``, which sends every step of the level still without a result.
"""
from __future__ import annotations

import logging

from celery import Task, shared_task
from sqlalchemy.orm import Session

from app.extensions import services
from app.services.analysis_steps import next_steps, step_inputs, store_step, summarise
from pipeline.types import PipelineError
from storage import analyses
from storage.models import Analysis, Notebook, utcnow
from tasks.contract import reason
from tasks.ingest import lease

log = logging.getLogger(__name__)

# An unreachable or overloaded model endpoint is retried after 5, 10 and 20 s.
MODEL_RETRIES = 3
MODEL_RETRY_SECONDS = 5


def start_analysis(analysis_id: str) -> None:
    advance.delay(analysis_id)


@shared_task(name="analysis.advance")
def advance(analysis_id: str, resend: bool = False) -> int:
    """Plan what is due; send the steps of a level planned now (all steps left, with ``resend``)."""
    svc = services()
    with svc.db.session() as session:
        analysis = _running(session, analysis_id, claim=True)
        if analysis is None:
            return 0
        try:
            due = next_steps(session, session.get(Notebook, analysis.notebook_id), analysis, svc.settings.analysis_batch)
        except Exception as err:  # noqa: BLE001 (the contract: a failure ends the analysis with its reason)
            _fail(analysis, "advance", err)
            return 0
    if due.planned_now or resend:
        for level, ordinal in due.steps:
            step.delay(analysis_id, level, ordinal)
    return len(due.steps)


@shared_task(name="analysis.step", bind=True, max_retries=MODEL_RETRIES)
def step(self: Task, analysis_id: str, level: int, ordinal: int) -> bool:
    """Run one map or reduce step (once: a resent one finds it done), then advance. Its inputs are
    read and its points stored in two short transactions; the engine works between them, holding
    no lock (a model answers in seconds; every other writer would wait on it). A model endpoint
    that is down or overloaded is waited for (``MODEL_RETRIES`` times, backing off) before the
    analysis fails with its reason."""
    svc = services()
    try:
        with svc.db.session() as session:  # the state check and a cancel's landing place
            if _running(session, analysis_id) is None:
                return False
        with svc.db.reader() as session:
            analysis = session.get(Analysis, analysis_id)
            inputs = analysis and step_inputs(session, session.get(Notebook, analysis.notebook_id), analysis, level, ordinal)
        points = summarise(inputs, svc.settings.analysis_batch, svc.analysis_engine(inputs.engine)) if inputs else None
        with svc.db.session() as session:
            analysis = _running(session, analysis_id)
            ran = bool(analysis and points is not None and store_step(session, analysis, level, ordinal, points))
        if points is not None:  # what a durability test counts: a finished step is never computed again
            log.info("analysis %s: step %d.%d computed, %s", analysis_id, level, ordinal, "stored" if ran else "discarded")
    except Exception as err:  # noqa: BLE001 (the contract: a failure ends the analysis with its reason)
        if isinstance(err, PipelineError) and err.code == "LLM_UNAVAILABLE" and self.request.retries < MODEL_RETRIES:
            raise self.retry(countdown=MODEL_RETRY_SECONDS * 2 ** self.request.retries) from err
        with svc.db.session() as session:
            failed = session.get(Analysis, analysis_id)
            if failed is not None and failed.state == "running":  # not one cancelled meanwhile
                _fail(failed, "step", err)
        return False
    advance.delay(analysis_id)
    return ran


def _running(session: Session, analysis_id: str, *, claim: bool = False) -> Analysis | None:
    """The analysis when a message may work on it, its lease renewed: a queued one is taken
    (``claim``), a ``cancelling`` one is cancelled here, and None stops the message."""
    analysis = session.get(Analysis, analysis_id)
    if analysis is None:
        return None
    if analysis.state == "cancelling":
        analyses.cancelled(analysis)
    if claim and analysis.state == "queued":
        analysis.state, analysis.started_at = "running", utcnow()
    if analysis.state != "running":
        return None
    analysis.lease_expires_at = utcnow() + lease()
    return analysis


def _fail(analysis: Analysis, where: str, err: BaseException) -> None:
    log.exception("analysis %s: the %s failed", analysis.id, where)
    analyses.fail(analysis, *reason(f"analysis {where}", err))
