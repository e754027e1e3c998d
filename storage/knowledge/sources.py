"""Knowledge sources and their versions: identity by content, never by file name.

Adding a document whose content hash an active source of the notebook already has (as its active
version) returns that version and its latest job; ``new_version`` forces a new one. The same
member with other bytes becomes the next version of its source, and the source's pointer moves to
it at once: the new version is what the source says now, so notes of the old one stop counting as
current (their source note stays readable), and what they fed is withdrawn by a
``source_replaced`` event (the caller enqueues it: ``Added.replaced``). A deleted source is
nobody's duplicate: the same file added again is a new source with new notes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.knowledge import jobs
from storage.knowledge.numbering import next_number
from storage.models import KnowledgeJob, KnowledgeSource, KnowledgeSourceVersion, Notebook, in_notebook, utcnow


@dataclass(frozen=True)
class Document:
    """A notebook member's document as the active revision holds it: its bytes' hash, the cached
    extraction the parse stage reads, the notebook source it came from, its file name."""

    resource_id: str
    content_hash: str
    extraction_key: str
    origin: dict[str, Any]
    label: str
    page_count: int | None


@dataclass(frozen=True)
class Added:
    """``replaced``: the version the source's pointer left (None: a new source, or a duplicate)."""

    version: KnowledgeSourceVersion
    job: KnowledgeJob | None
    duplicate: bool
    replaced: str | None = None


def add(
    session: Session, notebook: Notebook, document: Document, *, new_version: bool, engine: str, requested_by: str | None,
) -> Added:
    """Make ``document`` knowledge: an existing version when it is a duplicate, else a new version
    and a queued job (the caller sends it once this transaction commits)."""
    if not new_version and (existing := _active_version_with(session, notebook, document.content_hash)) is not None:
        return Added(existing, jobs.latest_of(session, existing.id), True)
    source = session.scalar(select(KnowledgeSource).where(
        in_notebook(KnowledgeSource, notebook), KnowledgeSource.resource_id == document.resource_id,
        KnowledgeSource.state == "active",
    ).order_by(KnowledgeSource.created_at.desc()).limit(1))
    if source is None:
        source = KnowledgeSource(vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
                                 resource_id=document.resource_id, label=document.label, state="active")
        session.add(source)
        session.flush()
    number = next_number(session, KnowledgeSourceVersion.number, KnowledgeSourceVersion.source_id == source.id)
    version = KnowledgeSourceVersion(
        vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, source_id=source.id, notebook_id=notebook.id,
        number=number, content_hash=document.content_hash, extraction_key=document.extraction_key,
        origin=document.origin, label=document.label, page_count=document.page_count,
    )
    session.add(version)
    session.flush()
    replaced, source.active_version_id, source.label = source.active_version_id, version.id, document.label
    job = jobs.start(session, notebook, version.id, engine=engine, requested_by=requested_by)
    return Added(version, job, False, replaced)


def _active_version_with(session: Session, notebook: Notebook, content_hash: str) -> KnowledgeSourceVersion | None:
    return session.scalar(
        select(KnowledgeSourceVersion)
        .join(KnowledgeSource, KnowledgeSource.active_version_id == KnowledgeSourceVersion.id)
        .where(in_notebook(KnowledgeSource, notebook), KnowledgeSource.state == "active",
               KnowledgeSourceVersion.content_hash == content_hash)
        .limit(1)
    )


def get(session: Session, notebook: Notebook, source_id: str) -> KnowledgeSource | None:
    return session.scalar(select(KnowledgeSource).where(in_notebook(KnowledgeSource, notebook), KnowledgeSource.id == source_id))


def version(session: Session, notebook: Notebook, version_id: str) -> KnowledgeSourceVersion | None:
    return session.scalar(select(KnowledgeSourceVersion).where(
        in_notebook(KnowledgeSourceVersion, notebook), KnowledgeSourceVersion.id == version_id
    ))


def of_notebook(session: Session, notebook: Notebook, *, limit: int, offset: int = 0) -> list[KnowledgeSource]:
    query = select(KnowledgeSource).where(in_notebook(KnowledgeSource, notebook))
    return list(session.scalars(query.order_by(KnowledgeSource.created_at, KnowledgeSource.id).limit(limit).offset(offset)))


def versions_of(session: Session, source_id: str) -> list[KnowledgeSourceVersion]:
    return versions_of_each(session, [source_id])


def versions_of_each(session: Session, source_ids: list[str]) -> list[KnowledgeSourceVersion]:
    """The versions of every source named, each source's in number order."""
    query = select(KnowledgeSourceVersion).where(KnowledgeSourceVersion.source_id.in_(source_ids))
    return list(session.scalars(query.order_by(KnowledgeSourceVersion.source_id, KnowledgeSourceVersion.number)))


# Why a job stopped when its source was deleted under it: a restore takes it up again.
STOPPED_BY_DELETION = ("SOURCE_DELETED", "SOURCE_CHANGED")


def delete(session: Session, source: KnowledgeSource) -> list[KnowledgeJob]:
    """Mark the source deleted and stop its versions' jobs (a queued one now, a running one at its
    next message; a publish re-checks the source anyway), saying why. Its notes stay, as history."""
    source.state, source.deleted_at = "deleted", utcnow()
    stopping = jobs.active_of_versions(session, [v.id for v in versions_of(session, source.id)])
    for job in stopping:
        if job.state != "cancelling":  # a job a person was cancelling already stays theirs to restart
            jobs.request_cancel(job)
            job.error_code, job.error = "SOURCE_DELETED", "The source was deleted while this job ran; restoring it resumes the job."
    return stopping


def active_duplicate(session: Session, notebook: Notebook, source: KnowledgeSource) -> KnowledgeSourceVersion | None:
    """Another active source's version with the bytes of ``source``'s active version: restoring
    ``source`` would then keep one document twice (its re-upload took its place)."""
    version = session.get(KnowledgeSourceVersion, source.active_version_id) if source.active_version_id else None
    found = _active_version_with(session, notebook, version.content_hash) if version is not None else None
    return found if found is not None and found.source_id != source.id else None


def restore(session: Session, source: KnowledgeSource) -> list[KnowledgeJob]:
    """Make the source active again, and take up the job its deletion stopped (its active
    version's, unless it ended otherwise or a person cancelled it): one still ``cancelling`` runs
    on, one already cancelled is queued again where it stopped, every stored stage output kept.
    The jobs to send again (the queued ones)."""
    source.state, source.deleted_at = "active", None
    stopped = session.scalars(select(KnowledgeJob).where(
        KnowledgeJob.source_version_id == source.active_version_id, KnowledgeJob.state.in_(("cancelling", "cancelled")),
        KnowledgeJob.error_code.in_(STOPPED_BY_DELETION)))
    queued = []
    for job in stopped:
        job.error_code = job.error = None
        if job.state == "cancelling":
            job.state = "running"
        else:
            job.state, job.finished_at, job.lease_expires_at, job.attempts = "queued", None, None, 0
            queued.append(job)
    return queued


def current_among(session: Session, version_ids: set[str]) -> set[str]:
    """Which of ``version_ids`` are ``is_current``, in one query."""
    if not version_ids:
        return set()
    return set(session.scalars(select(KnowledgeSource.active_version_id).where(
        KnowledgeSource.active_version_id.in_(version_ids), KnowledgeSource.state == "active")))


def is_current(session: Session, version_id: str) -> bool:
    """Whether ``version_id`` is the active version of a source that is not deleted: what every
    save re-checks (a publish after a deletion or a newer version must not land)."""
    return version_id in current_among(session, {version_id})
