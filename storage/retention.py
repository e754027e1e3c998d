"""Which revisions a notebook keeps, and deleting the rest (rows, FTS entries, vectors).

Kept: the active revision, the newest N complete ones, the newest M audit revisions (checks that
found nothing new), every revision a chat message answered from, and any draft of a job still
running. Cancelled and failed drafts were never
visible and go at once. Deleting a revision cascades to its sources, chunks and vectors; the FTS5
delete trigger removes the index entries.
"""
from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from storage import conversations
from storage.jobs import ACTIVE_STATES
from storage.models import AuditOutcome, Job, Notebook, Revision, Source


def apply(session: Session, notebook: Notebook, *, completed_keep: int, audit_keep: int) -> set[str]:
    """Delete what the policy does not keep; returns the content hashes the deleted sources held
    (their blobs may now be unreferenced)."""
    revisions = session.scalars(
        select(Revision)
        .where(
            Revision.notebook_id == notebook.id,
            Revision.vault_hash == notebook.vault_hash,
            Revision.workspace_id == notebook.workspace_id,
        )
        .order_by(Revision.number.desc())
    ).all()
    running_drafts = session.scalars(
        select(Job.revision_id).where(Job.notebook_id == notebook.id, Job.state.in_(ACTIVE_STATES))
    ).all()
    complete = [r.id for r in revisions if r.state == "complete"][:completed_keep]
    audit = [r.id for r in revisions if r.state == "audit"][:audit_keep]
    pinned = conversations.pinned_revisions(session, notebook)
    keep = {notebook.active_revision_id, *running_drafts, *complete, *audit, *pinned}
    doomed = [r.id for r in revisions if r.id not in keep]
    released: set[str] = set()
    if doomed:
        released = set(
            session.scalars(
                select(Source.content_hash).where(Source.revision_id.in_(doomed), Source.content_hash.is_not(None))
            )
        )
        session.execute(delete(Revision).where(Revision.id.in_(doomed)))
    _trim_audit_outcomes(session, notebook, audit_keep)
    return released


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
