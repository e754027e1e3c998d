"""Who may do what with a notebook's knowledge, and which document a member gives it.

Whoever may read the notebook reads its knowledge (viewers included); adding a document, deleting
or restoring a source, and cancelling or restarting a job are for those who may write (editors and
admins), as starting an analysis is. A knowledge source is made from a member's document as the
active revision holds it: a paged document (a PDF or a scan) that was extracted, so that its
cached extraction is what the parse stage reads.
"""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.errors import ApiError
from app.services.chat_request import READY_STATES, pinned_revision
from storage import notebooks
from storage.knowledge import jobs, sources
from storage.knowledge.sources import Document
from storage.models import KnowledgeJob, KnowledgeSource, Notebook, Source
from storage.scope import Principal


def writer(principal: Principal) -> None:
    if not principal.can_write:
        raise ApiError(403, "READ_ONLY", "Viewers can read the notebook's knowledge but not change it.")


def member_document(session: Session, notebook: Notebook, resource_id: str, source_id: str | None) -> Document:
    """The member's paged document in the active revision (``source_id`` picks one of several)."""
    if resource_id not in notebooks.member_ids(session, notebook):
        raise ApiError(404, "RESOURCE_NOT_IN_NOTEBOOK", "That resource is not in this notebook.")
    revision = pinned_revision(session, notebook, page=False)
    query = select(Source).where(Source.revision_id == revision.id, Source.resource_id == resource_id)
    if source_id is not None:
        query = query.where(Source.id == source_id)
    candidates = list(session.scalars(query.order_by(Source.field, Source.value)))
    if not candidates:
        raise ApiError(404, "SOURCE_NOT_FOUND", "No such source of that resource in the active revision.")
    paged = [s for s in candidates if s.page_count and s.extraction_key and s.content_hash]
    ready = [s for s in paged if s.state in READY_STATES]
    if not ready:
        if paged:
            raise ApiError(409, "SOURCE_NOT_READY", "The document has not been extracted yet (or failed to): wait for the notebook.")
        raise ApiError(422, "NOT_A_PAGED_DOCUMENT", "Only paged documents (PDFs, scans) become source notes.")
    chosen = ready[0]
    return Document(
        resource_id=resource_id, content_hash=chosen.content_hash, extraction_key=chosen.extraction_key,
        origin={"revision_id": revision.id, "source_id": chosen.id, "kind": chosen.kind, "value": chosen.value},
        label=chosen.value.rsplit("/", 1)[-1][:500], page_count=chosen.page_count,
    )


def source(session: Session, notebook: Notebook, source_id: str) -> KnowledgeSource:
    found = sources.get(session, notebook, source_id)
    if found is None:
        raise ApiError(404, "KNOWLEDGE_SOURCE_NOT_FOUND", "No such knowledge source in this notebook.")
    return found


def job(session: Session, notebook: Notebook, job_id: str) -> KnowledgeJob:
    found = jobs.get(session, notebook, job_id)
    if found is None:
        raise ApiError(404, "KNOWLEDGE_JOB_NOT_FOUND", "No such knowledge job in this notebook.")
    return found
