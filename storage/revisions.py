"""Immutable evidence revisions: draft → complete, and the one-transaction active switch.

A draft is invisible: readers only ever follow ``notebooks.active_revision_id``, and that pointer
moves only in ``activate``, after every source of the draft reached a final state.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from pipeline.chunk_context import chunk_context
from storage.models import Chunk, ChunkVector, Notebook, Revision, Source, in_notebook, new_id, utcnow

FINAL_SOURCE_STATES = ("available", "stale", "error")


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    ordinal: int
    text: str
    locator: dict[str, Any]
    vector: bytes | memoryview


def create_draft(session: Session, notebook: Notebook, job_id: str) -> Revision:
    number = (
        session.scalar(select(func.max(Revision.number)).where(Revision.notebook_id == notebook.id))
        or 0
    ) + 1
    revision = Revision(
        vault_hash=notebook.vault_hash,
        workspace_id=notebook.workspace_id,
        notebook_id=notebook.id,
        number=number,
        job_id=job_id,
    )
    session.add(revision)
    session.flush()
    return revision


def get(session: Session, notebook: Notebook, revision_id: str) -> Revision | None:
    """The notebook's revision, unless retention deleted or retired it (storage.retention)."""
    return session.scalar(
        select(Revision).where(
            Revision.id == revision_id,
            Revision.state != "retired",
            in_notebook(Revision, notebook),
        )
    )


def sources(session: Session, revision_id: str) -> list[Source]:
    return list(
        session.scalars(
            select(Source)
            .where(Source.revision_id == revision_id)
            .order_by(Source.resource_id, Source.field, Source.value)
        ).all()
    )


def source_in(session: Session, notebook: Notebook, revision_id: str, source_id: str) -> Source | None:
    return session.scalar(
        select(Source).where(
            Source.id == source_id,
            Source.revision_id == revision_id,
            in_notebook(Source, notebook),
        )
    )


def add_source(session: Session, revision: Revision, **values: Any) -> Source:
    """A new source of ``revision``, holding its own chunks until told to share another's."""
    source_id = new_id()
    source = Source(
        id=source_id,
        vault_hash=revision.vault_hash,
        workspace_id=revision.workspace_id,
        notebook_id=revision.notebook_id,
        revision_id=revision.id,
        chunks_revision_id=revision.id,
        chunks_source_id=source_id,
        **values,
    )
    session.add(source)  # inserted with the others at the next flush: a refresh adds hundreds
    return source


COPIED_SOURCE_FIELDS = (
    "resource_id", "field", "kind", "value", "fingerprint", "file_size", "file_mtime_ns", "error_code", "error", "mime", "title",
    "final_url", "etag", "last_modified", "media_fingerprint", "content_hash", "page_count", "pages_needing_ocr",
    "duration_seconds", "transcribed_by", "checked_at", "extraction_key", "chunking",
)


@dataclass(frozen=True)
class CopiedChunks:
    rows: list[ChunkRow]
    embedder: str


def chunk_rows(session: Session, source: Source) -> CopiedChunks:
    """The chunks ``source`` serves, with their vectors, ready to be stored again under another."""
    pairs = session.execute(
        select(Chunk, ChunkVector)
        .join(ChunkVector, ChunkVector.chunk_pk == Chunk.id)
        .where(Chunk.revision_id == source.chunks_revision_id, Chunk.source_id == source.chunks_source_id)
        .order_by(Chunk.ordinal)  # ix_chunks_revision_source
    ).all()
    return CopiedChunks(
        rows=[ChunkRow(c.chunk_id, c.ordinal, c.text, c.locator, v.vector) for c, v in pairs],
        embedder=pairs[0][1].embedder if pairs else "",
    )


def carry_source(
    session: Session, old: Source, revision: Revision, *, state: str, resource_title: str | None
) -> Source:
    """Carry a source into ``revision`` without re-extracting it, under the record's current
    title (a renamed record needs a new revision, not a new extraction)."""
    values = {name: getattr(old, name) for name in COPIED_SOURCE_FIELDS}
    values["state"] = state
    values["resource_title"] = resource_title
    new = add_source(session, revision, **values)
    share_chunks(session, old, new)
    return new


def share_chunks(session: Session, previous: Source, target: Source) -> None:
    """Let ``target`` serve ``previous``'s chunks: the same rows, FTS entries and vectors when they
    would be indexed alike, a copy only when the document's names (the context every chunk is
    indexed with) differ, as after a record was renamed."""
    if _context_of(previous) == _context_of(target):
        target.chunks_revision_id = previous.chunks_revision_id
        target.chunks_source_id = previous.chunks_source_id
        return
    copied = chunk_rows(session, previous)
    store_chunks(session, target, copied.rows, embedder=copied.embedder)


def _context_of(source: Source) -> str:
    return chunk_context(
        resource_title=source.resource_title, source_title=source.title, kind=source.kind, value=source.value
    )


_INSERT_CHUNK = (
    "INSERT INTO chunks (vault_hash, workspace_id, notebook_id, revision_id, source_id, resource_id,"
    " chunk_id, ordinal, text, context, locator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_VECTOR = (
    "INSERT INTO chunk_vectors (chunk_pk, embedder, vector)"
    " SELECT id, ?, ? FROM chunks WHERE revision_id = ? AND chunk_id = ?"
)


def store_chunks(session: Session, source: Source, rows: Sequence[ChunkRow], *, embedder: str) -> int:
    """Bulk-insert chunks (the FTS5 trigger indexes them) and then their vectors.

    Plain DB-API ``executemany``: this is the coordinator's hottest statement. SQLite's own work
    (FTS5 indexing most of all) dominates it, so the Python around it is kept to one tuple per row
    instead of the ORM's bulk insert with RETURNING. Vectors find their chunk through the
    (revision, chunk id) unique index. The document context is computed here from the source
    row, so chunks copied into another revision take that revision's names of the document.
    """
    if not rows:
        return 0
    if source.chunks_source_id != source.id:
        raise ValueError(f"source {source.id} serves another source's chunks and stores none")
    context = _context_of(source)
    scope = (source.vault_hash, source.workspace_id, source.notebook_id, source.revision_id, source.id,
             source.resource_id)
    session.flush()  # the source row, which the raw inserts below reference
    connection = session.connection()
    # ``json.dumps`` is what the ORM's JSON type writes (storage.db sets no custom serializer).
    connection.exec_driver_sql(
        _INSERT_CHUNK,
        [(*scope, r.chunk_id, r.ordinal, r.text, context, json.dumps(r.locator)) for r in rows],
    )
    connection.exec_driver_sql(
        _INSERT_VECTOR, [(embedder, r.vector, source.revision_id, r.chunk_id) for r in rows]
    )
    return len(rows)


def drop_chunks(session: Session, revision_id: str) -> None:
    """Delete the chunks stored for a revision, their FTS rows and vectors (cascade), keeping its
    sources.

    An audit revision (a check that found the same evidence as the active revision) keeps its
    source rows and outcomes as the record of the check; the chunks it stored (of sources it
    extracted again) would only repeat the active revision's, so they go as soon as the check is
    known to be one. No other revision serves them: refreshes share the active revision's.
    """
    session.execute(delete(Chunk).where(Chunk.revision_id == revision_id))


def pending_count(session: Session, revision_id: str) -> int:
    return session.scalar(
        select(func.count())
        .select_from(Source)
        .where(Source.revision_id == revision_id, Source.state.not_in(FINAL_SOURCE_STATES))
    ) or 0


def activate(session: Session, notebook: Notebook, revision: Revision) -> None:
    """Complete the draft and point the notebook at it; callers run this inside one transaction."""
    revision.state = "complete"
    revision.completed_at = utcnow()
    notebook.active_revision_id = revision.id
    notebook.updated_at = utcnow()


def abandon(session: Session, revision: Revision, state: str) -> None:
    """Mark a draft as never to be activated (``cancelled`` or ``failed``)."""
    revision.state = state
