"""Ask for an ingestion: durable job row first, broker message only after the commit."""
from __future__ import annotations

from typing import Any

from app.extensions import Services
from storage import jobs
from storage.models import Job, Notebook
from tasks.ingest import dispatch_ingest


def request_ingest(
    svc: Services, notebook_id: str, *, requested_by: str, params: dict[str, Any] | None = None
) -> tuple[str, Job]:
    """Returns ("queued" | "coalesced", job). The message is sent after the row is committed, so
    a worker never receives an id it cannot read; if sending fails, the sweeper re-sends it."""
    with svc.db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        request = jobs.request_ingest(session, notebook, requested_by=requested_by, params=params or {})
    if request.outcome == "queued":
        dispatch_ingest(request.job.id)
    return request.outcome, request.job
