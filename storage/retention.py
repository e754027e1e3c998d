"""Which revisions a notebook keeps, and deleting the rest (rows, FTS entries, vectors).

Kept: the active revision, the newest N complete ones, the newest M audit revisions (checks that
found nothing new), every revision a chat message answered from or an analysis reads, and any
draft of a job still running. Cancelled and failed drafts were never
visible and go at once. Deleting a source cascades to the chunks stored for it and their vectors;
the FTS5 delete trigger removes the index entries.

Revisions share the chunks of sources that did not change (storage.revisions.share_chunks), so a
source version is deleted only when no kept revision serves its chunks. A revision that is not
kept but stored chunks a kept one serves is ``retired``: it loses every other source and keeps
only those source versions, until a later pass finds them unused and deletes it.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from storage import analyses, conversations
from storage.jobs import ACTIVE_STATES
from storage.models import AuditOutcome, Job, Notebook, Revision, Source, in_notebook


@dataclass(frozen=True)
class Released:
    """What the deleted sources held: blobs and cached extractions that may now be unreferenced."""

    content_hashes: frozenset[str] = frozenset()
    extraction_keys: frozenset[str] = frozenset()


def apply(session: Session, notebook: Notebook, *, completed_keep: int, audit_keep: int) -> Released:
    """Delete what the policy does not keep; returns what the deleted sources held."""
    revisions = session.scalars(
        select(Revision)
        .where(
            in_notebook(Revision, notebook),
        )
        .order_by(Revision.number.desc())
    ).all()
    running_drafts = session.scalars(
        select(Job.revision_id).where(Job.notebook_id == notebook.id, Job.state.in_(ACTIVE_STATES))
    ).all()
    complete = [r.id for r in revisions if r.state == "complete"][:completed_keep]
    audit = [r.id for r in revisions if r.state == "audit"][:audit_keep]
    pinned = conversations.pinned_revisions(session, notebook) | analyses.pinned_revisions(session, notebook)
    keep = {notebook.active_revision_id, *running_drafts, *complete, *audit, *pinned}
    doomed = [r.id for r in revisions if r.id not in keep]
    released = _delete(session, doomed, kept=[r.id for r in revisions if r.id in keep]) if doomed else Released()
    _trim_audit_outcomes(session, notebook, audit_keep)
    return released


def _delete(session: Session, doomed: list[str], *, kept: list[str]) -> Released:
    """Delete the doomed revisions' source versions that no kept revision serves, then the
    revisions left holding none (the others are retired)."""
    served = (
        select(Source.chunks_source_id)
        .where(Source.revision_id.in_(kept), Source.chunks_revision_id.in_(doomed))
        .scalar_subquery()
    )
    unused = (Source.revision_id.in_(doomed)) & Source.id.not_in(served)
    held = session.execute(select(Source.content_hash, Source.extraction_key).where(unused)).all()
    session.execute(delete(Source).where(unused))
    retired = set(session.scalars(select(Source.revision_id).where(Source.revision_id.in_(doomed)).distinct()))
    session.execute(delete(Revision).where(Revision.id.in_(set(doomed) - retired)))
    if retired:
        session.execute(update(Revision).where(Revision.id.in_(retired)).values(state="retired"))
    return Released(
        frozenset(row.content_hash for row in held if row.content_hash),
        frozenset(row.extraction_key for row in held if row.extraction_key),
    )


def _trim_audit_outcomes(session: Session, notebook: Notebook, audit_keep: int) -> None:
    """Keep the outcomes recorded by the newest ``audit_keep`` checking jobs."""
    newest_jobs = (
        select(AuditOutcome.job_id)
        .where(AuditOutcome.notebook_id == notebook.id)
        .group_by(AuditOutcome.job_id)
        .order_by(func.max(AuditOutcome.id).desc())
        .limit(audit_keep)
    )
    session.execute(
        delete(AuditOutcome).where(
            AuditOutcome.notebook_id == notebook.id, AuditOutcome.job_id.not_in(newest_jobs.scalar_subquery())
        )
    )
