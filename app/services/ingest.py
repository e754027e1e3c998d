"""Ask for an ingestion: durable job row first, broker message only after the commit."""
from __future__ import annotations

import logging
from typing import Any

from kombu.exceptions import KombuError

from app.extensions import Services
from app.services.current_sources import plan
from pipeline.planning import touched, unchanged
from storage import ingestion, jobs, notebooks
from storage.models import Job, Notebook, utcnow
from tasks.ingest import dispatch_ingest

log = logging.getLogger(__name__)


def _nothing_changed(svc: Services, notebook_id: str, *, explicit: bool) -> bool:
    """True when a complete revision exists, no job runs and every source matches it.

    A source in error counts as a change (the next job retries it), except, unless ``explicit``,
    while its resource waits out its retry delay: an opening or a question must not re-queue a
    resource that fails every time. An opening or a question also takes a recent verdict of the
    same notebook state (app.services.recent_checks); an explicit refresh looks and retries at once.
    """
    with svc.db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        if notebook.active_revision_id is None or jobs.active_job(session, notebook) is not None:
            return False
        stamp = (notebook.active_revision_id, notebook.updated_at)
        if not explicit and svc.recent_checks.unchanged(notebook_id, stamp):
            return True
        waiting = set() if explicit else notebooks.backed_off(session, notebook, utcnow())
        member_ids = [m for m in notebooks.member_ids(session, notebook) if m not in waiting]
        previous = {k: p for k, p in ingestion.previous_sources(session, notebook).items() if k[0] not in waiting}
    plans = plan(svc, notebook, member_ids, previous)
    if touched(plans):
        with svc.db.session() as session:
            ingestion.remember_stats(session, plans)
    if not unchanged(plans, previous):
        return False
    with svc.db.session() as session:
        ingestion.mark_checked(session, notebook_id, previous, utcnow())
    svc.recent_checks.remember(notebook_id, stamp)
    return True


def request_ingest(
    svc: Services,
    notebook_id: str,
    *,
    requested_by: str,
    params: dict[str, Any] | None = None,
    only_if_changed: bool = False,
    explicit: bool = False,
) -> tuple[str, Job | None]:
    """Returns ("queued" | "coalesced" | "not_needed", job).

    The message is sent after the row is committed, so a worker never receives an id it cannot
    read. If sending fails (broker down), the job is still queued, durably: the answer says so
    truthfully and the sweeper sends the message later from the row.
    """
    if only_if_changed and _nothing_changed(svc, notebook_id, explicit=explicit):
        return "not_needed", None
    with svc.db.reader() as session:  # asked again while a job waits: no write lock (app.services.chat_turn._thread)
        queued = jobs.absorbing_job(session, session.get(Notebook, notebook_id), params or {})
    if queued is not None:
        request = jobs.IngestRequest(queued, "coalesced")
    else:
        with svc.db.session() as session:
            notebook = session.get(Notebook, notebook_id)
            request = jobs.request_ingest(session, notebook, requested_by=requested_by, params=params or {})
    log.info("ingestion %s: job %s", request.outcome, request.job.id, extra={"job_id": request.job.id})
    if request.outcome == "queued":
        try:
            dispatch_ingest(request.job.id)
        except (KombuError, OSError):
            log.warning("broker unavailable: job %s stays queued for the sweeper", request.job.id, exc_info=True)
    return request.outcome, request.job
