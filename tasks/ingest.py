"""The ingestion chain: notebook_ingest → extract_source (per source, queue "extract") →
store_extraction (which activates the revision once the last source is stored).

Each source travels as its own ``extract_source | store_extraction`` chain rather than one chord:
every result is stored as soon as it arrives (progress is real, a crash loses only sources in
flight), no result backend is needed, and the last store activates the revision through a
compare-and-set that exactly one of them wins.
"""
from __future__ import annotations

import logging
import os

from celery import chain, shared_task

from app.extensions import Services, services
from pipeline.catalogue import record_sources, resolve_attachment
from pipeline.fingerprint import file_sha256
from pipeline.planning import plan_sources, unchanged
from pipeline.source_processing import SourceResult, process_source
from pipeline.types import PipelineError, SourceRef
from storage import ingestion, jobs, notebooks
from storage.models import Notebook, utcnow

log = logging.getLogger(__name__)


def dispatch_ingest(job_id: str) -> None:
    notebook_ingest.delay(job_id)


def _current_sources(svc: Services, notebook: Notebook, member_ids: list[str]) -> list[tuple[SourceRef, str | None]]:
    """Each member's attachment/URL values now, with attachment fingerprints (URLs: None)."""
    table = svc.catalogue.table(notebook.table_id)
    records = {r.resource_id: r for r in svc.catalogue.records(table) if not r.is_template}
    current = []
    for resource_id in member_ids:
        record = records.get(resource_id)
        if record is None:
            continue
        for ref in record_sources(record, table, allowlist=svc.settings.url_allowlist):
            current.append((ref, _fingerprint(svc, ref)))
    return current


def _fingerprint(svc: Services, ref: SourceRef) -> str | None:
    if ref.kind != "attachment":
        return None
    try:
        return file_sha256(resolve_attachment(svc.settings.vault_path, ref.value))
    except (PipelineError, OSError):
        return None  # the extract step reports the precise error for this source


@shared_task(name="notebook_ingest", bind=True)
def notebook_ingest(self, job_id: str) -> None:  # type: ignore[no-untyped-def]
    svc = services()
    owner = f"{self.request.hostname}/{os.getpid()}"
    with svc.db.session() as session:
        job = jobs.claim(session, job_id, owner)
        if job is None:
            return
        notebook = session.get(Notebook, job.notebook_id)
        member_ids = notebooks.member_ids(session, notebook)
        previous = ingestion.previous_sources(session, notebook)
        force = frozenset(job.params.get("force_resource_ids", []))
    try:
        current = _current_sources(svc, notebook, member_ids)
    except PipelineError as err:
        with svc.db.session() as session:
            jobs.transition(session, job_id, ("running", "cancelling"), "failed", error=err.message)
        return
    plans = plan_sources(
        current, previous, now=utcnow(), url_ttl_seconds=svc.settings.url_refresh_ttl_seconds,
        force_resource_ids=force,
    )
    with svc.db.session() as session:
        job = jobs.get(session, job_id)
        notebook = session.get(Notebook, job.notebook_id)
        if job.state == "cancelling":
            ingestion.cancel(session, job)
            return
        if unchanged(plans, previous) and notebook.active_revision_id:
            finish = ingestion.finish_unchanged(session, job, notebook)
            orders = []
        else:
            orders = ingestion.start_revision(session, job, notebook, plans)
            finish = None if orders else ingestion.finish_if_complete(session, job, notebook)
    for order in orders:
        chain(
            extract_source.s(order.source_id, order.ref, order.validators),
            store_extraction.s(job_id),
        ).apply_async()
    if finish and finish.follow_up_job_id:
        dispatch_ingest(finish.follow_up_job_id)


@shared_task(name="extract_source")
def extract_source(source_id: str, ref: dict, validators: dict) -> dict:
    """Stateless: reads the source, returns chunks and vectors; never touches the database."""
    svc = services()
    try:
        result = process_source(
            source_id,
            SourceRef.from_dict(ref),
            vault=svc.settings.vault_path,
            policy=svc.fetch_policy,
            embedder=svc.embedder,
            attachment_max_bytes=svc.settings.attachment_max_bytes,
            validators=validators,
        )
    except Exception as err:  # a bug in one extractor must not stall the whole job
        log.exception("extracting source %s failed", source_id)
        result = SourceResult(source_id, "error", "EXTRACTION_FAILED", f"{type(err).__name__}: {err}"[:500])
    return result.to_dict()


@shared_task(name="store_extraction")
def store_extraction(result: dict, job_id: str) -> None:
    svc = services()
    with svc.db.session() as session:
        job = jobs.get(session, job_id)
        if job is not None and job.state == "cancelling":
            ingestion.cancel(session, job)
        if job is None or job.state != "running":
            return
        notebook = session.get(Notebook, job.notebook_id)
        ingestion.record_result(session, job, notebook, SourceResult.from_dict(result))
        jobs.heartbeat(session, job_id)
        finish = ingestion.finish_if_complete(session, job, notebook)
    if finish and finish.follow_up_job_id:
        dispatch_ingest(finish.follow_up_job_id)
