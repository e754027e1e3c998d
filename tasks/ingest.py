"""The ingestion chain: notebook_ingest → extract_source (per source, queue "extract") →
store_extraction (which activates the revision once the last source is stored).

Each source travels as its own ``extract_source | store_extraction`` chain rather than one chord:
every result is stored as soon as it arrives (progress is real, a crash loses only sources in
flight), no result backend is needed, and the last store activates the revision through a
compare-and-set that exactly one of them wins (docs/decisions/0002).
"""
from __future__ import annotations

import logging
import os
import uuid
from datetime import timedelta

from celery import chain, shared_task

from app.extensions import Services, services
from app.services.current_sources import plan
from pipeline import evidence_pack
from pipeline.catalogue import resolve_attachment
from pipeline.planning import unchanged
from pipeline.source_processing import SourceResult, process_source
from pipeline.types import PipelineError, SourceRef
from storage import ingestion, jobs, notebooks
from storage.ingestion import ExtractOrder
from storage.models import Notebook
from tasks.internal_api import InternalApiUnavailable

log = logging.getLogger(__name__)


def dispatch_ingest(job_id: str) -> None:
    notebook_ingest.delay(job_id)


def dispatch_orders(job_id: str, orders: list[ExtractOrder]) -> None:
    for order in orders:
        chain(
            extract_source.s(job_id, order.source_id, order.ref, order.validators),
            store_extraction.s(job_id),
        ).apply_async()


def lease() -> timedelta:
    return timedelta(seconds=services().settings.job_lease_seconds)


def retention() -> tuple[int, int]:
    settings = services().settings
    return settings.completed_revision_retention, settings.audit_revision_retention


@shared_task(name="notebook_ingest", bind=True)
def notebook_ingest(self, job_id: str) -> None:  # type: ignore[no-untyped-def]
    """Fingerprint the members' sources, start a draft revision, fan out the extraction."""
    svc = services()
    with svc.db.session() as session:
        job = jobs.claim(session, job_id, f"{self.request.hostname}/{os.getpid()}", lease())
        if job is None:
            return
        if job.revision_id is not None:  # a crashed run already started the draft: resume it
            resumed = ingestion.pending_orders(session, job)
        else:
            resumed = None
            notebook = session.get(Notebook, job.notebook_id)
            member_ids = notebooks.member_ids(session, notebook)
            previous = ingestion.previous_sources(session, notebook)
    if resumed is not None:
        dispatch_orders(job_id, resumed)
        return
    try:
        plans = plan(svc, notebook, member_ids, previous, frozenset(job.params.get("force_resource_ids", [])))
    except PipelineError as err:
        with svc.db.session() as session:
            jobs.transition(session, job_id, ("running", "cancelling"), "failed", error=err.message)
        return
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
            finish = None if orders else ingestion.finish_if_complete(session, job, notebook, retention())
    dispatch_orders(job_id, orders)
    after_finish(finish)


@shared_task(
    name="extract_source",
    autoretry_for=(InternalApiUnavailable,),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=8,
)
def extract_source(job_id: str, source_id: str, ref: dict, validators: dict) -> dict:
    """Stateless: asks the API instance for job state and bytes; never touches the database.

    Every failure but an unreachable API instance (retried) becomes this source's ``error``, which
    travels to ``store_extraction`` on the broker like any result: a worker that can never succeed
    (a wrong GNOSI_INTERNAL_TOKEN, say) ends its sources with that reason instead of leaving the
    job waiting for lease recovery, which would only send the same work back to it.
    """
    svc = services()
    try:
        result = _extract(svc, job_id, source_id, SourceRef.from_dict(ref), validators)
    except InternalApiUnavailable:
        raise
    except PipelineError as err:
        result = SourceResult(source_id, "error", err.code, err.message[:500])
    except Exception as err:  # a bug in one extractor must not stall the whole job
        log.exception("extracting source %s failed", source_id)
        result = SourceResult(source_id, "error", "EXTRACTION_FAILED", f"{type(err).__name__}: {err}"[:500])
    if result.error_code == "JOB_CANCELLED":
        result = SourceResult(source_id, "cancelled")
    if result.evidence is not None:
        return _upload_evidence(job_id, result)
    return result.to_message()


def _extract(svc: Services, job_id: str, source_id: str, source: SourceRef, validators: dict) -> SourceResult:
    api = svc.internal_api
    # Attachments learn the job's state from the byte fetch itself; URLs ask first.
    if source.kind != "attachment" and api.job_state(job_id) in ("cancelling", "cancelled"):
        return SourceResult(source_id, "cancelled")
    return process_source(
        source_id,
        source,
        read_attachment=lambda: api.attachment(job_id, source_id),
        policy=svc.fetch_policy,
        embedder=svc.embedder,
        limits=svc.settings.extract_limits,
        validators=validators,
    )


def _upload_evidence(job_id: str, result: SourceResult) -> dict:
    """Send the evidence to the instance that owns the database and return the message that names
    it: only the outcome travels on the broker (pipeline.evidence_pack says why)."""
    assert result.evidence is not None
    pack_id = uuid.uuid4().hex  # each attempt its own pack: a retry never replaces another's
    try:
        services().internal_api.put_evidence(job_id, result.source_id, pack_id, evidence_pack.encode(result.evidence))
    except PipelineError as err:
        if err.code in ("JOB_CANCELLED", "SOURCE_NOT_PENDING"):
            return SourceResult(result.source_id, "cancelled").to_message()  # nothing left to store
        return SourceResult(result.source_id, "error", err.code, err.message, result.meta).to_message()
    return {**result.to_message(), "pack": pack_id}


def _with_evidence(job_id: str, message: dict) -> SourceResult | None:
    """The message with the evidence of the pack it names; None when that pack is missing or torn
    (the source stays ``indexing`` and lease recovery extracts it again)."""
    if message["status"] != "extracted":
        return SourceResult.from_message(message)
    source_id, pack_id = message["source_id"], message.get("pack")
    data = services().spool.read(job_id, source_id, pack_id) if pack_id else None
    try:
        if data is None:
            raise PipelineError("EVIDENCE_PACK_MISSING", f"no pack {pack_id} in the spool")
        evidence_pack.check_size(data[:evidence_pack.PREFIX_SIZE], len(data))
    except PipelineError as err:
        log.warning("source %s of job %s left for recovery: %s", source_id, job_id, err.message)
        return None
    try:
        return SourceResult.from_message(message, evidence_pack.decode(data))
    except PipelineError as err:  # whole but unreadable: extracting again would make it again
        return SourceResult(source_id, "error", err.code, err.message, message.get("meta") or {})


@shared_task(name="store_extraction")
def store_extraction(message: dict, job_id: str) -> None:
    """Store one source's result in the draft; the last one activates the revision."""
    svc = services()
    finish: ingestion.Finish | None = None
    keep_bytes: tuple[str, str | None] | None = None
    try:
        with svc.db.session() as session:
            job = jobs.get(session, job_id)
            if job is not None and job.state == "cancelling":
                ingestion.cancel(session, job)
            if job is None or job.state != "running":
                return
            if ingestion.awaiting_result(session, job, message["source_id"]) is None:
                return  # a repeated or late message: this source already has its result
            parsed = _with_evidence(job_id, message)
            if parsed is None:
                return
            notebook = session.get(Notebook, job.notebook_id)
            source = ingestion.record_result(session, job, notebook, parsed)
            if source is not None and source.kind == "attachment" and parsed.status == "extracted":
                keep_bytes = (source.value, source.content_hash)
            jobs.heartbeat(session, job_id, lease())
            finish = ingestion.finish_if_complete(session, job, notebook, retention())
    finally:
        if message.get("pack"):
            svc.spool.discard(job_id, message["source_id"], message["pack"])
    if keep_bytes:
        _keep_attachment_copy(*keep_bytes)
    after_finish(finish)


def _keep_attachment_copy(rel_path: str, sha256: str | None) -> None:
    """Citations open these exact bytes later, even after the vault file changes."""
    svc = services()
    if not sha256:
        return
    try:
        svc.blobs.put_file(resolve_attachment(svc.settings.vault_path, rel_path), sha256)
    except (PipelineError, OSError):
        log.warning("could not keep a copy of %s", rel_path)


def after_finish(finish: ingestion.Finish | None) -> None:
    """Outside the transaction: start the coalesced follow-up job and drop unreferenced blobs."""
    if finish is None:
        return
    if finish.follow_up_job_id:
        dispatch_ingest(finish.follow_up_job_id)
    if finish.released_blobs:
        svc = services()
        with svc.db.reader() as session:
            svc.blobs.delete_unreferenced(session, set(finish.released_blobs))
