"""Ingestion as five Celery steps (docs/decisions/0008):

``ingest.fingerprint`` (coordinator) compares the members' sources with the active revision,
starts a draft and sends each source that needs work along ``ingest.extract`` → ``ingest.chunk``
(extract queue, database-free) → ``ingest.index`` (coordinator); the index step that stores a
job's last source sends ``ingest.activate`` (coordinator), which activates the draft through a
compare-and-set that exactly one wins, then sends ``ingest.write_vectors`` for the revision.

Each source travels as its own chain rather than one chord: every result is stored as soon as it
arrives (progress is real, a crash loses only sources in flight) and no result backend is needed
(docs/decisions/0002). Extractions are cached by content (``pipeline.extraction_cache``), so a
new chunking recipe or a retry chunks again without extracting again. Every step keeps the
contract of ``tasks.contract``.
"""
from __future__ import annotations

import logging
import os
import uuid
from dataclasses import asdict, replace
from datetime import timedelta
from functools import partial
from importlib import import_module
from pathlib import PurePosixPath
from types import ModuleType
from typing import Any

from celery import chain, shared_task

from app.extensions import services
from app.logs import log_ids
from app.services.current_sources import plan
from pipeline import evidence_pack
from pipeline.catalogue import resolve_attachment
from pipeline.chunker import ChunkSettings
from pipeline.extraction_cache import attachment_inputs, decode, encode, extraction_key
from pipeline.planning import unchanged
from pipeline.source_result import SourceResult
from pipeline.types import FILE_KINDS, Extraction, PipelineError, SourceRef
from storage import ingestion, jobs, notebooks, revisions, step_durations
from storage.ingestion import ExtractOrder
from storage.models import Notebook
from tasks.contract import StepClock, fail_job, reason, running_job, source_step
from tasks.extract_progress import downloading, hearing, reading_page
from tasks.internal_api import InternalApiUnavailable

log = logging.getLogger(__name__)
SOURCE_PROCESSING = "pipeline.source_processing"

# The API instance may be restarting: the source steps wait for it (up to about 8 minutes).
_API_RETRY: dict[str, Any] = {
    "autoretry_for": (InternalApiUnavailable,), "retry_backoff": 2, "retry_backoff_max": 60, "max_retries": 8,
}


def _processing() -> ModuleType:
    """``pipeline.source_processing``, loaded when a step first needs it: it brings every extractor
    and yt-dlp (~0.8 s a start), which web and beat processes, registering these tasks, never use.
    Workers load it before forking their pool (``tasks.worker``), so their children share it."""
    return import_module(SOURCE_PROCESSING)


def dispatch_ingest(job_id: str) -> None:
    fingerprint.delay(job_id)


def dispatch_orders(job_id: str, orders: list[ExtractOrder]) -> None:
    """Send each order along extract → chunk → index, chunked as this instance's settings say."""
    chunking = asdict(services().settings.chunking)
    for order in orders:
        chain(
            extract.s(asdict(order), job_id),
            chunk.s(job_id, order.ref, chunking),
            index.s(job_id),
        ).apply_async()


def lease() -> timedelta:
    return timedelta(seconds=services().settings.job_lease_seconds)


def retention() -> tuple[int, int]:
    settings = services().settings
    return settings.completed_revision_retention, settings.audit_revision_retention


@shared_task(name="ingest.fingerprint", bind=True, max_retries=None)  # the job row counts attempts
def fingerprint(self, job_id: str) -> None:  # type: ignore[no-untyped-def]
    """Fingerprint the members' sources, start a draft revision, send the sources that need work.

    An unexpected failure is tried again with the job's attempts as the count; an expected one
    (the notebook's table is gone, say) fails the job at once: trying again would not change it.
    """
    clock = StepClock({}, "fingerprint")
    try:
        with log_ids(job_id=job_id):
            _fingerprint(job_id, f"{self.request.hostname}/{os.getpid()}", clock)
    except PipelineError as err:
        fail_job(job_id, "fingerprint", err)
    except Exception as err:
        log.exception("fingerprinting job %s failed", job_id)
        with services().db.session() as session:
            job = jobs.get(session, job_id)
            again = job is not None and job.attempts < services().settings.job_max_attempts
            if again:
                jobs.release(session, job_id)
        if not again:
            fail_job(job_id, "fingerprint", err)
            return
        raise self.retry(exc=err, countdown=min(2 ** job.attempts, 60)) from err


def _fingerprint(job_id: str, owner: str, clock: StepClock) -> None:
    svc = services()
    max_attempts = svc.settings.job_max_attempts
    with svc.db.session() as session:
        job = jobs.claim(session, job_id, owner, lease())
        if job is None:
            return
        if job.attempts > max_attempts:
            exhausted = f"{ingestion.ATTEMPTS_EXHAUSTED}: {ingestion.attempts_exhausted(job.attempts - 1)}"
            jobs.transition(session, job_id, ("running",), "failed", error=exhausted)
            return
        notebook = session.get(Notebook, job.notebook_id)
        if job.revision_id is not None:  # a crashed run already started the draft: resume it
            resumed = ingestion.pending_orders(session, job, notebook, max_attempts)
        else:
            resumed = None
            member_ids = notebooks.member_ids(session, notebook)
            previous = ingestion.previous_sources(session, notebook)
    if resumed is not None:
        send_orders(job_id, resumed)
        return
    plans = plan(svc, notebook, member_ids, previous, frozenset(job.params.get("force_resource_ids", [])))
    with svc.db.session() as session:
        job = running_job(session, job_id)
        if job is None:
            return
        notebook = session.get(Notebook, job.notebook_id)
        ingestion.remember_stats(session, plans)  # before reused sources are copied, so copies have it too
        step_durations.observe(session, clock.timings())  # a resumed draft's run is not counted
        if unchanged(plans, previous) and notebook.active_revision_id:
            after_finish(ingestion.finish_unchanged(session, job, notebook, previous))
            return
        orders = ingestion.start_revision(session, job, notebook, plans)
    send_orders(job_id, orders)


def send_orders(job_id: str, orders: list[ExtractOrder]) -> None:
    """Send the orders; with none left, the job only waits for its activation."""
    if orders:
        dispatch_orders(job_id, [_look_up_cache(order) for order in orders])
    else:
        activate.delay(job_id)


def _look_up_cache(order: ExtractOrder) -> ExtractOrder:
    """Answer an attachment's cache question here, beside the cache (a file's existence), so the
    extract worker neither asks over HTTP nor, when the same bytes were read before (another
    record, another notebook), reads them at all."""
    if order.content_hash is None or order.cached_extraction is not None:
        return order
    svc = services()
    inputs = attachment_inputs(PurePosixPath(order.ref["value"]).name)
    key = extraction_key(order.content_hash, inputs, svc.settings.extract_limits)
    if svc.extractions.has(key):
        return replace(order, cached_extraction={"key": key, "content_hash": order.content_hash})
    return replace(order, cache_checked=True)


# The last extraction this process made: the chunk step that follows usually runs in the same
# worker, which then need not download what it just uploaded, and a retry of a failed upload
# sends it instead of reading the source again (OCR: seconds a page). One entry, taken when used.
_recent: dict[str, Extraction] = {}


def _fetches_its_attachment(order: dict[str, Any]) -> bool:
    return order["ref"]["kind"] in FILE_KINDS and not order.get("cached_extraction")


@shared_task(name="ingest.extract", **_API_RETRY)
@source_step("extract", reads_state_itself=_fetches_its_attachment)
def extract(order: dict[str, Any], job_id: str) -> dict[str, Any]:
    """Read a source's bytes through the API instance (attachments) or the network (URLs: the
    conditional fetch is where a page's fingerprint is taken) and extract them unless the cache
    holds their extraction already. Database-free."""
    svc = services()
    api, limits = svc.internal_api, svc.settings.extract_limits
    source_id, ref = order["source_id"], SourceRef.from_dict(order["ref"])
    cached, validators = order.get("cached_extraction"), order.get("validators") or {}
    if cached and not validators and api.has_extraction(cached["key"]):  # same bytes, new chunking recipe
        return _extracted(source_id, cached["key"], {"content_hash": cached["content_hash"], "reused": True})
    read = _processing().read_source(
        ref,
        read_attachment=lambda: api.attachment(job_id, source_id),
        policy=svc.fetch_policy,
        validators=validators,
        streams=svc.stream_limits,
        before_download=partial(downloading, job_id, source_id),
    )
    if isinstance(read, _processing().Unchanged):
        if cached and api.has_extraction(cached["key"]):  # a recording checked unchanged, for a new recipe
            return _extracted(source_id, cached["key"], {**read.meta, "content_hash": cached["content_hash"]})
        return SourceResult(source_id, "not_modified", meta=read.meta).to_message()
    key = extraction_key(read.content_hash, read.inputs, limits)
    known_missing = order.get("cache_checked") and read.content_hash == order.get("content_hash")
    if known_missing or not api.has_extraction(key):
        extraction = _recent.get(key) or _processing().extract_read(
            read, limits,
            before_page=partial(reading_page, job_id, source_id), before_window=partial(hearing, job_id, source_id),
        )
        _recent.clear()
        _recent[key] = extraction  # before the upload: its retry sends this, not a second reading
        api.put_extraction(key, encode(extraction))
        log.info("extractor read source %s: %d segments, cached as %s", source_id, len(extraction.segments), key)
    return _extracted(source_id, key, read.meta)


def _extracted(source_id: str, key: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {**SourceResult(source_id, "extracted", meta=meta).to_message(), "extraction": key}


@shared_task(name="ingest.chunk", **_API_RETRY)
@source_step("chunk")
def chunk(message: dict[str, Any], job_id: str, ref: dict[str, Any], chunking: dict[str, int]) -> dict[str, Any]:
    """Chunk and embed a source's cached extraction and upload the evidence. Database-free."""
    svc = services()
    key = message["extraction"]
    extraction = _recent.pop(key, None) or _download(key)
    result = _processing().chunk_extraction(
        message["source_id"],
        SourceRef.from_dict(ref),
        extraction,
        meta={**message["meta"], "extraction_key": key},
        chunking=ChunkSettings(**chunking),
        embedder=svc.embedder,
        limits=svc.settings.extract_limits,
    )
    if result.evidence is None:
        return result.to_message()
    return _upload_evidence(job_id, result)


def _download(key: str) -> Extraction:
    svc = services()
    data = svc.internal_api.extraction(key)
    if data is None:
        raise PipelineError(
            "EXTRACTION_MISSING", "The cached extraction of this source is gone; refreshing the notebook reads it again."
        )
    return decode(data, max_bytes=svc.settings.evidence_max_bytes)


def _upload_evidence(job_id: str, result: SourceResult) -> dict[str, Any]:
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


def _with_evidence(job_id: str, message: dict[str, Any]) -> SourceResult | None:
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


@shared_task(name="ingest.index")
def index(message: dict[str, Any], job_id: str) -> None:
    """Store one source's result in the draft; the one that stores the last sends the activation.

    A failure while storing becomes the source's error (in a transaction of its own); if even
    that cannot be written, the source stays ``indexing`` for lease recovery to send again.
    """
    svc = services()
    clock = StepClock(message.get("timings") or {}, "index")
    try:
        with log_ids(job_id=job_id, source_id=message["source_id"]):
            complete = _index(job_id, message, clock)
    except Exception as err:
        log.exception("indexing source %s of job %s failed", message["source_id"], job_id)
        code, text = reason("index", err)
        failed = SourceResult(message["source_id"], "error", code, text, message.get("meta") or {})
        complete = _record(job_id, failed, clock)
    finally:
        if message.get("pack"):
            svc.spool.discard(job_id, message["source_id"], message["pack"])
    if complete:
        activate.delay(job_id)


def _index(job_id: str, message: dict[str, Any], clock: StepClock) -> bool:
    """The pack is read and checked before the write transaction, which it would only lengthen."""
    with services().db.reader() as session:
        job = jobs.get(session, job_id)
        state = job.state if job is not None else None
        waiting = state == "running" and ingestion.awaiting_result(session, job, message["source_id"]) is not None
    if state == "cancelling":
        return _record(job_id, None, clock)
    if not waiting:  # an ended job, or a repeated or late message: this source has its result
        return False
    parsed = _with_evidence(job_id, message)
    return parsed is not None and _record(job_id, parsed, clock)


def _record(job_id: str, result: SourceResult | None, clock: StepClock) -> bool:
    """Record ``result`` (None: nothing to record, only the job's state to honour) and the
    source's step durations; True when no source of the job is left waiting."""
    keep_bytes: tuple[str, str | None] | None = None
    with services().db.session() as session:
        job = running_job(session, job_id)
        if job is None or result is None:
            return False
        notebook = session.get(Notebook, job.notebook_id)
        source = ingestion.record_result(session, job, notebook, result)
        if source is not None and source.kind == "attachment" and result.status == "extracted":
            keep_bytes = (source.value, source.content_hash)
        jobs.heartbeat(session, job_id, lease())
        complete = revisions.pending_count(session, job.revision_id) == 0
        step_durations.observe(session, clock.timings())
    if keep_bytes:
        _keep_attachment_copy(*keep_bytes)
    return complete


def _keep_attachment_copy(rel_path: str, sha256: str | None) -> None:
    """Citations open these exact bytes later, even after the vault file changes."""
    svc = services()
    if not sha256:
        return
    try:
        svc.blobs.put_file(resolve_attachment(svc.settings.vault_path, rel_path), sha256)
    except (PipelineError, OSError):
        log.warning("could not keep a copy of %s", rel_path)


@shared_task(name="ingest.activate")
def activate(job_id: str) -> None:
    """Activate the job's draft once no source waits (or keep it as an audit record)."""
    clock = StepClock({}, "activate")
    try:
        with log_ids(job_id=job_id), services().db.session() as session:
            job = running_job(session, job_id)
            if job is None:
                return
            notebook = session.get(Notebook, job.notebook_id)
            finish = ingestion.finish_if_complete(session, job, notebook, retention())
            step_durations.observe(session, clock.timings())
            active = notebook.active_revision_id if finish is not None else None
    except Exception as err:
        log.exception("activating job %s failed", job_id)
        fail_job(job_id, "activate", err)
        return
    after_finish(finish)
    if active:
        write_vectors.delay(active)


@shared_task(name="ingest.write_vectors")
def write_vectors(revision_id: str) -> None:
    """The active revision's vector files, so that no search (nor any restart) reads them from
    rows (storage.vector_files); a failure only leaves that to the first search. A task of its
    own on the coordinator's queue: at 1M chunks it reads for ~25 s, after the job has ended."""
    svc = services()
    try:
        with svc.db.reader() as session:
            svc.vector_files.ensure(session, revision_id, svc.embedder)
    except Exception:
        log.exception("could not write the vector files of revision %s", revision_id)


def after_finish(finish: ingestion.Finish | None) -> None:
    """Outside the transaction: start the coalesced follow-up job, drop unreferenced blobs and
    cached extractions."""
    if finish is None:
        return
    if finish.follow_up_job_id:
        dispatch_ingest(finish.follow_up_job_id)
    services().release(finish.released)
