"""The write side of one ingestion job: start a draft revision, record each source, activate.

Every function runs inside the caller's write transaction, so a source's chunks, its state and the
job's progress change together or not at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import literal_column, select, update
from sqlalchemy.orm import Session

from pipeline.planning import PlannedSource, PreviousSource, SourceKey, retry_delay, touched
from pipeline.source_result import SourceResult
from pipeline.types import FILE_KINDS, SourceRef
from storage import jobs, notebooks, retention, revisions
from storage.models import AuditOutcome, Job, Notebook, NotebookResource, Revision, Source, utcnow


@dataclass(frozen=True)
class ExtractOrder:
    """One message for an extract worker."""

    source_id: str
    ref: dict[str, Any]
    validators: dict[str, str]
    cached_extraction: dict[str, str] | None = None  # {"key", "content_hash"} of a cached extraction
    # An attachment's content hash as fingerprinted, so the coordinator can look its extraction up.
    content_hash: str | None = None
    cache_checked: bool = False  # the coordinator found no cached extraction: the worker need not ask


@dataclass(frozen=True)
class Finish:
    """What happened when the last source of a job was recorded."""

    state: str  # job's final state
    follow_up_job_id: str | None = None
    released: retention.Released = retention.Released()


# What planning reads of each source of the active revision (PreviousSource's fields, in order).
_PREVIOUS = (
    Source.id, Source.state, Source.fingerprint, Source.checked_at, Source.etag, Source.last_modified,
    Source.media_fingerprint, Source.content_hash, Source.file_size, Source.file_mtime_ns, Source.resource_title,
    Source.extraction_key, Source.chunking,
)


def previous_sources(session: Session, notebook: Notebook) -> dict[SourceKey, PreviousSource]:
    """The active revision's sources as planning compares them. Read as plain rows of the columns
    it needs: every opening and question after the change-check window runs this, and loading
    1,000 ``Source`` objects took ~35 ms of a 100 ms check (bench/change_check.py)."""
    if notebook.active_revision_id is None:
        return {}
    rows = session.execute(
        select(Source.resource_id, Source.field, Source.value, *_PREVIOUS)
        .where(Source.revision_id == notebook.active_revision_id)
    )
    return {(resource_id, field, value): PreviousSource(*known) for resource_id, field, value, *known in rows}


def start_revision(
    session: Session, job: Job, notebook: Notebook, plans: list[PlannedSource]
) -> list[ExtractOrder]:
    """Create the draft, carry reused sources over, and return the sources left to extract."""
    revision = revisions.create_draft(session, notebook, job.id)
    carried = [plan.previous.source_id for plan in plans if plan.action != "extract" and plan.previous is not None]
    previous = {source.id: source for source in session.scalars(select(Source).where(Source.id.in_(carried)))}
    orders = []
    for plan in plans:
        if plan.action != "extract" and plan.previous is not None:
            old = previous.get(plan.previous.source_id)
            if old is not None:
                state = "error" if plan.action == "hold" else "available"
                revisions.carry_source(session, old, revision, state=state, resource_title=plan.resource_title)
                continue
        source = revisions.add_source(
            session,
            revision,
            resource_id=plan.ref.resource_id,
            field=plan.ref.field,
            kind=plan.ref.kind,
            value=plan.ref.value,
            fingerprint=plan.fingerprint,
            file_size=plan.file_size,
            file_mtime_ns=plan.file_mtime_ns,
            resource_title=plan.resource_title,
            state="indexing",
        )
        source.attempts = 1
        content_hash = plan.fingerprint if plan.ref.kind in FILE_KINDS else None
        orders.append(ExtractOrder(source.id, plan.ref.to_dict(), dict(plan.validators), _cached(plan), content_hash))
    job.revision_id = revision.id
    job.total = len({order.ref["resource_id"] for order in orders})  # resources, as the sources panel counts
    job.done = 0
    job.current_resource_id = orders[0].ref["resource_id"] if orders else None
    return orders


ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"


def attempts_exhausted(attempts: int) -> str:
    """Why a job or source ended after too many attempts (bounded; it names the setting)."""
    return (
        f"No worker finished this in {attempts} attempts (GNOSI_JOB_MAX_ATTEMPTS); "
        "the workers that took it stopped or were killed while working on it."
    )


def _cached(plan: PlannedSource) -> dict[str, str] | None:
    """The cached extraction an order may chunk from, with the content hash its chunk ids need."""
    previous = plan.previous
    if plan.cached_extraction is None or previous is None or previous.content_hash is None:
        return None
    return {"key": plan.cached_extraction, "content_hash": previous.content_hash}


def pending_orders(session: Session, job: Job, notebook: Notebook, max_attempts: int) -> list[ExtractOrder]:
    """The sources of a job's draft still waiting for a result, to resend after a crash.

    Resending is safe: a result for a source that is no longer ``indexing`` is ignored. A source
    already sent ``max_attempts`` times is not resent but ends in ``error``: whatever it does to
    the workers that take it (a crash, a kill by the memory limit of a container), it would do
    again.
    """
    if job.revision_id is None:
        return []
    orders = []
    for source in revisions.sources(session, job.revision_id):
        if source.state != "indexing":
            continue
        if source.attempts >= max_attempts:
            gave_up = SourceResult(source.id, "error", ATTEMPTS_EXHAUSTED, attempts_exhausted(source.attempts))
            record_result(session, job, notebook, gave_up)
            continue
        source.attempts += 1
        ref = SourceRef(source.resource_id, source.field, source.kind, source.value)  # type: ignore[arg-type]
        orders.append(ExtractOrder(source.id, ref.to_dict(), {}))
    return orders


def _previous_of(session: Session, notebook: Notebook, source: Source) -> Source | None:
    if notebook.active_revision_id is None:
        return None
    return session.scalar(
        select(Source).where(
            Source.revision_id == notebook.active_revision_id,
            Source.resource_id == source.resource_id,
            Source.field == source.field,
            Source.value == source.value,
            Source.state.in_(("available", "stale")),
        )
    )


_CHECK_VALIDATORS = ("final_url", "etag", "last_modified", "media_fingerprint")  # what the next check compares with


def _apply_meta(source: Source, meta: dict[str, Any]) -> None:
    for name in ("mime", "title", "page_count", "pages_needing_ocr", "content_hash", "duration_seconds",
                 "transcribed_by", *_CHECK_VALIDATORS, "extraction_key", "chunking"):
        if name in meta:
            setattr(source, name, meta[name])


def _audit(session: Session, job: Job, source: Source, outcome: str, detail: str | None) -> None:
    session.add(
        AuditOutcome(
            vault_hash=source.vault_hash,
            workspace_id=source.workspace_id,
            notebook_id=source.notebook_id,
            job_id=job.id,
            resource_id=source.resource_id,
            source_value=source.value,
            outcome=outcome,
            detail=detail,
        )
    )


def awaiting_result(session: Session, job: Job, source_id: str) -> Source | None:
    """The source if it is in the job's draft and still waits for its result, else None (a
    repeated, late or foreign message)."""
    source = session.get(Source, source_id)
    if source is None or source.revision_id != job.revision_id or source.state != "indexing":
        return None
    return source


def record_result(session: Session, job: Job, notebook: Notebook, result: SourceResult) -> Source | None:
    """Store one extract result into the job's draft revision; returns the source it updated
    (None for a result that is stale, duplicated or cancelled: it is ignored)."""
    source = awaiting_result(session, job, result.source_id)
    if source is None or result.status == "cancelled":
        return None
    _apply_meta(source, result.meta)
    source.checked_at = utcnow()
    if result.meta.get("reused"):
        _keep_last_check(session, notebook, source)
    if result.status == "extracted":
        if result.evidence is None:
            raise ValueError(f"an extracted result for source {source.id} came without its evidence")
        source.fingerprint = source.fingerprint or result.meta.get("content_hash")
        evidence = result.evidence
        rows = [
            revisions.ChunkRow(c["chunk_id"], c["ordinal"], c["text"], c["locator"], evidence.vector(i))
            for i, c in enumerate(evidence.chunks)
        ]
        revisions.store_chunks(session, source, rows, embedder=evidence.embedder)
        source.state = "available"
        source.error_code, source.error = result.error_code, result.error  # a truncation note, if any
        if source.kind == "url" and not result.meta.get("reused"):
            _audit(session, job, source, "changed", None)
    else:
        _carry_previous(session, job, notebook, source, result)
    _count_progress(session, job)
    return source


def _count_progress(session: Session, job: Job) -> None:
    """Resources done (none of their sources still indexing) of those the job works on, and the
    one a worker most likely holds: the earliest sent of those still indexing (sources are sent in
    the order they were added, and queues hand them out first in, first out)."""
    waiting = session.scalars(
        select(Source.resource_id)
        .where(Source.revision_id == job.revision_id, Source.state == "indexing")
        .order_by(literal_column("sources.rowid"))
    ).all()
    job.done = job.total - len(set(waiting))
    job.current_resource_id = waiting[0] if waiting else None
    job.activity = None


def _keep_last_check(session: Session, notebook: Notebook, source: Source) -> None:
    """A source chunked again from its cached extraction was not checked again: its last check's
    time and validators stay (a page's refresh interval runs on from that check)."""
    previous = _previous_of(session, notebook, source)
    if previous is not None:
        for name in ("checked_at", *_CHECK_VALIDATORS):
            setattr(source, name, getattr(previous, name))


# What the last representation of a source says about it, kept when that representation is.
_CARRIED_META = ("fingerprint", "mime", "title", "page_count", "content_hash", "duration_seconds", "transcribed_by",
                 "extraction_key", "chunking")


def _carry_previous(
    session: Session, job: Job, notebook: Notebook, source: Source, result: SourceResult
) -> None:
    """Not modified → copy the last representation; failed → keep it as ``stale`` or report ``error``."""
    previous = _previous_of(session, notebook, source)
    if previous is not None:  # before the chunks are shared: their context is built from these
        for name in _CARRIED_META:
            setattr(source, name, getattr(previous, name))
    if result.status == "not_modified" and previous is not None:
        revisions.share_chunks(session, previous, source)
        source.state = "available"
        _audit(session, job, source, "unchanged", None)
        return
    source.error_code = result.error_code or "NOT_MODIFIED_WITHOUT_PREVIOUS"
    source.error = result.error or "The server said the page is unchanged, but no copy is kept."
    if previous is not None:
        revisions.share_chunks(session, previous, source)
        source.state = "stale"
    else:
        source.state = "error"
    if source.kind == "url":
        _audit(session, job, source, "error", source.error)



def finish_if_complete(
    session: Session, job: Job, notebook: Notebook, keep: tuple[int, int]
) -> Finish | None:
    """Once no source is left indexing: activate the draft, or keep it as an audit record when it
    equals the active revision (a check that found nothing new must not create a new revision).

    ``keep`` is (completed revisions kept, audit revisions kept). None while work remains.
    """
    if job.revision_id is None or revisions.pending_count(session, job.revision_id):
        return None
    revision = session.get(Revision, job.revision_id)
    assert revision is not None
    if not jobs.transition(session, job.id, ("running",), "succeeded"):
        return None
    if notebook.active_revision_id and _same_evidence(session, notebook, revision):
        revision.state = "audit"
        revision.completed_at = utcnow()
        _carry_check_times(session, notebook, revision)
        revisions.drop_chunks(session, revision.id)
    else:
        revisions.activate(session, notebook, revision)
        _mark_members_checked(session, notebook, revision)
    _track_failures(session, notebook, revision)
    released = retention.apply(session, notebook, completed_keep=keep[0], audit_keep=keep[1])
    return Finish("succeeded", _follow_up(session, job, notebook), released)


def _carry_check_times(session: Session, notebook: Notebook, audit: Revision) -> None:
    """An unchanged check still counts as a check: the TTL restarts from it (evidence is untouched)."""
    checked = {(s.resource_id, s.field, s.value): s for s in revisions.sources(session, audit.id)}
    for source in revisions.sources(session, notebook.active_revision_id):
        newer = checked.get((source.resource_id, source.field, source.value))
        if newer is not None and newer.checked_at:
            for name in ("checked_at", *_CHECK_VALIDATORS):
                setattr(source, name, getattr(newer, name))


def _same_evidence(session: Session, notebook: Notebook, revision: Revision) -> bool:
    def signature(rows: list[Source]) -> dict[SourceKey, tuple[str, str | None, str | None, str | None]]:
        return {(s.resource_id, s.field, s.value): (s.state, s.fingerprint, s.resource_title, s.chunking) for s in rows}

    active = revisions.sources(session, notebook.active_revision_id)
    return signature(active) == signature(revisions.sources(session, revision.id))


def cancel(session: Session, job: Job) -> None:
    """Finish a job whose cancellation was requested; its draft is never activated."""
    if job.revision_id is not None:
        revision = session.get(Revision, job.revision_id)
        if revision is not None and revision.state == "draft":
            revisions.abandon(session, revision, "cancelled")
    jobs.transition(session, job.id, ("cancelling",), "cancelled")


def remember_stats(session: Session, plans: list[PlannedSource]) -> None:
    """Store the observed stat of touched, unchanged attachments on the sources they reuse
    (``pipeline.planning.touched``): metadata of the observation, not of the content, so the
    active revision's rows may take it."""
    for plan in touched(plans):
        assert plan.previous is not None
        source = session.get(Source, plan.previous.source_id)
        if source is not None:
            source.file_size, source.file_mtime_ns = plan.file_size, plan.file_mtime_ns


def finish_unchanged(
    session: Session, job: Job, notebook: Notebook, previous: dict[SourceKey, PreviousSource]
) -> Finish:
    """Nothing changed: the job succeeds without a new revision, and its check counts as one."""
    jobs.transition(session, job.id, ("running",), "succeeded")
    mark_checked(session, notebook.id, previous, utcnow())
    return Finish("succeeded", _follow_up(session, job, notebook))


def mark_checked(
    session: Session, notebook_id: str, previous: dict[SourceKey, PreviousSource], at: datetime
) -> None:
    """A check found the active revision's sources unchanged: the members whose sources are all
    available were checked successfully ``at`` (the sources panel's "last successful check")."""
    failing = {key[0] for key, source in previous.items() if source.state != "available"}
    checked = {key[0] for key in previous} - failing
    if checked:
        session.execute(
            update(NotebookResource)
            .where(NotebookResource.notebook_id == notebook_id, NotebookResource.resource_id.in_(checked))
            .values(last_success_at=at)
        )


def _mark_members_checked(session: Session, notebook: Notebook, revision: Revision) -> None:
    ok = {
        s.resource_id
        for s in revisions.sources(session, revision.id)
        if s.state == "available"
    }
    for member in session.scalars(
        select(NotebookResource).where(NotebookResource.notebook_id == notebook.id)
    ):
        if member.resource_id in ok:
            member.last_success_at = revision.completed_at


def _track_failures(session: Session, notebook: Notebook, revision: Revision) -> None:
    """Count consecutive jobs that ended with a resource in error and set its next retry time,
    so that opening a notebook does not re-queue a resource that keeps failing every time."""
    failed = {s.resource_id for s in revisions.sources(session, revision.id) if s.state == "error"}
    now = utcnow()
    for member in notebooks.members(session, notebook):
        if member.resource_id in failed:
            member.failures += 1
            member.retry_at = now + retry_delay(member.failures)
        elif member.failures or member.retry_at:
            member.failures, member.retry_at = 0, None


def _follow_up(session: Session, job: Job, notebook: Notebook) -> str | None:
    if not job.rerun_requested:
        return None
    request = jobs.request_ingest(
        session, notebook, requested_by=job.requested_by, params=dict(job.params.get("rerun", {}))
    )
    return request.job.id if request.outcome == "queued" else None
