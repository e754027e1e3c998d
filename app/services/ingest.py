"""Ask for an ingestion: durable job row first, broker message only after the commit."""
from __future__ import annotations

from typing import Any

from app.extensions import Services
from app.services.current_sources import plan
from pipeline.planning import unchanged
from storage import ingestion, jobs, notebooks
from storage.models import Job, Notebook
from tasks.ingest import dispatch_ingest


def _nothing_changed(svc: Services, notebook_id: str) -> bool:
    """True when a complete revision exists, no job runs and every source matches it."""
    with svc.db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        if notebook.active_revision_id is None or jobs.active_job(session, notebook) is not None:
            return False
        member_ids = notebooks.member_ids(session, notebook)
        previous = ingestion.previous_sources(session, notebook)
    if any(p.state == "error" for p in previous.values()):
        return False  # a refresh is also the retry of failed sources
    return unchanged(plan(svc, notebook, member_ids, previous), previous)


def request_ingest(
    svc: Services,
    notebook_id: str,
    *,
    requested_by: str,
    params: dict[str, Any] | None = None,
    only_if_changed: bool = False,
) -> tuple[str, Job | None]:
    """Returns ("queued" | "coalesced" | "not_needed", job).

    The message is sent after the row is committed, so a worker never receives an id it cannot
    read; if sending fails, the sweeper sends it later from the row.
    """
    if only_if_changed and _nothing_changed(svc, notebook_id):
        return "not_needed", None
    with svc.db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        request = jobs.request_ingest(session, notebook, requested_by=requested_by, params=params or {})
    if request.outcome == "queued":
        dispatch_ingest(request.job.id)
    return request.outcome, request.job
