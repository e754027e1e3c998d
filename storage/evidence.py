"""Read side of the evidence index: FTS5 candidates, vectors and exact chunk reads.

Every query joins ``notebook_resources`` (current membership), so evidence of a removed resource
disappears at once, before any replacement revision exists.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from storage.models import Chunk, Notebook, NotebookResource, Source, in_notebook

# bm25 weights of chunks_fts's columns (context, text): a question naming the document ("Adobe",
# "2022 10-K") should prefer that document's pages. Chosen with bench/answer_quality.py. The
# first column, revision_id, only restricts the match (weight 0; alembic 0009).
COLUMN_WEIGHTS = (2.0, 1.0)

# The index ranks first and the join sees only its best ``depth`` rows: joining every matching row
# before sorting doubled the query's time (bench/retrieval.py). Rows of resources removed since
# the revision was built drop out in the join; fts_candidates then asks for a deeper list.
# The best ``depth`` rows come from the index alone; each is then looked up (by primary key) to say
# whether it still belongs to a member of the notebook. Rows of a resource removed since the revision
# was built are marked, not dropped, so the caller knows whether a deeper list could add any.
FTS_SQL = text(
    """
    SELECT best.rowid, best.score, EXISTS (
        SELECT 1 FROM chunks c
        JOIN notebook_resources m
          ON m.notebook_id = c.notebook_id AND m.resource_id = c.resource_id
         AND m.vault_hash = c.vault_hash AND m.workspace_id = c.workspace_id
        JOIN sources s ON s.revision_id = :revision_id AND s.chunks_source_id = c.source_id
        WHERE c.id = best.rowid
          AND c.notebook_id = :notebook_id
          AND c.vault_hash = :vault_hash AND c.workspace_id = :workspace_id
    ) AS member
    FROM (
        SELECT rowid, bm25(chunks_fts, 0.0, :context_weight, :text_weight) AS score
        FROM chunks_fts
        WHERE chunks_fts MATCH :match
        ORDER BY score
        LIMIT :depth
    ) AS best
    ORDER BY best.score, best.rowid
    """
)


@dataclass(frozen=True)
class EvidenceChunk:
    pk: int
    chunk_id: str
    revision_id: str
    resource_id: str
    source_id: str
    text: str
    locator: dict[str, Any]
    source_kind: str
    source_value: str
    source_final_url: str | None
    source_title: str | None
    source_mime: str | None
    names: str = ""  # every name of the document (``Chunk.context``: record title, declared title, file name)


def _member_join(notebook: Notebook):  # type: ignore[no-untyped-def]
    return (NotebookResource.resource_id == Chunk.resource_id) & in_notebook(NotebookResource, notebook)


# A chunk's primary key and its bm25 score (lower is better, as FTS5 orders them).
Candidate = tuple[int, float]


def within_columns(match: str) -> str:
    """``match`` over the names and text of chunks, not the revision ids beside them."""
    return f"{{context text}} : ({match})"


def within_revisions(match: str, revision_ids: list[str]) -> str:
    """``match`` over the names and text of chunks stored for ``revision_ids`` only: FTS5
    intersects those revisions' posting lists with the words' instead of scoring every notebook's
    rows."""
    tokens = " OR ".join('"{}"'.format(revision.replace('"', '""')) for revision in revision_ids)
    return f"revision_id : ({tokens}) AND {within_columns(match)}"


def best_of_members(best: Callable[[int], list[tuple[int, float, bool]]], limit: int) -> list[Candidate]:
    """The ``limit`` best candidates that belong to current members, best first. ``best(depth)``
    gives an index's ``depth`` best rows, each marked member or not; when removed resources took
    too many of them and the index has more, a list four times deeper is asked for."""
    depth = limit
    while True:
        rows = best(depth)
        kept = [(pk, score) for pk, score, member in rows if member]
        if len(kept) >= limit or len(rows) < depth:  # enough, or the index holds no more
            return kept[:limit]
        depth *= 4


def storing_revisions(session: Session, revision_id: str) -> list[str]:
    """The revisions whose stored chunks ``revision_id`` serves: itself and those it shares from."""
    return sorted(
        session.scalars(
            select(Source.chunks_revision_id).where(Source.revision_id == revision_id).distinct()
        ).all()
    )


def fts_candidates(
    session: Session,
    notebook: Notebook,
    revision_id: str,
    match: str,
    limit: int,
    weights: tuple[float, float] = COLUMN_WEIGHTS,
) -> list[Candidate]:
    """The ``limit`` best chunks of current members for ``match``, best first, ranked by the main
    table (storage.lexical_index ranks in the revision's packs once they have their indexes)."""
    storing = storing_revisions(session, revision_id)
    if not storing:
        return []

    def best(depth: int) -> list[tuple[int, float, bool]]:
        rows = session.execute(
            FTS_SQL,
            {
                "context_weight": weights[0],
                "text_weight": weights[1],
                "match": within_revisions(match, storing),
                "depth": depth,
                "revision_id": revision_id,
                "notebook_id": notebook.id,
                "vault_hash": notebook.vault_hash,
                "workspace_id": notebook.workspace_id,
            },
        ).all()
        return [(int(pk), float(score), bool(member)) for pk, score, member in rows]

    return best_of_members(best, limit)


def _evidence_query(notebook: Notebook, revision_id: str):  # type: ignore[no-untyped-def]
    """Chunks served by ``revision_id`` with the source row that serves them in that revision."""
    return (
        select(Chunk, Source)
        .join(
            Source,
            (Source.chunks_revision_id == Chunk.revision_id) & (Source.chunks_source_id == Chunk.source_id),
        )
        .join(NotebookResource, _member_join(notebook))
        .where(
            Source.revision_id == revision_id,
            in_notebook(Chunk, notebook),
        )
    )


def _to_evidence(chunk: Chunk, source: Source) -> EvidenceChunk:
    """The chunk as ``source``'s revision serves it: a shared chunk is cited in that revision."""
    return EvidenceChunk(
        pk=chunk.id,
        chunk_id=chunk.chunk_id,
        revision_id=source.revision_id,
        resource_id=chunk.resource_id,
        source_id=source.id,
        text=chunk.text,
        locator=chunk.locator,
        source_kind=source.kind,
        source_value=source.value,
        source_final_url=source.final_url,
        source_title=source.title,
        source_mime=source.mime,
        names=chunk.context,
    )


def chunks_by_pk(
    session: Session, notebook: Notebook, revision_id: str, pks: list[int]
) -> dict[int, EvidenceChunk]:
    rows = session.execute(_evidence_query(notebook, revision_id).where(Chunk.id.in_(pks))).all()
    return {chunk.id: _to_evidence(chunk, source) for chunk, source in rows}


def revision_chunks(
    session: Session, notebook: Notebook, revision_id: str, *, source_ids: list[str] | None = None,
    chunk_ids: list[str] | None = None,
) -> list[tuple[EvidenceChunk, int]]:
    """The chunks ``revision_id`` serves of the notebook's current members (of ``source_ids`` or
    the named ``chunk_ids`` only, when given) with their ordinals, in reading order: resource by
    resource, each source's chunks in order."""
    query = _evidence_query(notebook, revision_id)
    if source_ids:
        query = query.where(Source.id.in_(source_ids))
    if chunk_ids is not None:
        query = query.where(Chunk.chunk_id.in_(chunk_ids))
    rows = session.execute(query.order_by(Chunk.resource_id, Source.id, Chunk.ordinal)).all()
    return [(_to_evidence(chunk, source), chunk.ordinal) for chunk, source in rows]


def revision_chunk_sizes(
    session: Session, notebook: Notebook, revision_id: str, *, source_ids: list[str] | None = None
) -> list[tuple[str, int]]:
    """``revision_chunks``' ids and text lengths only (planning a whole notebook reads no text)."""
    query = _evidence_query(notebook, revision_id).with_only_columns(Chunk.chunk_id, func.length(Chunk.text))
    if source_ids:
        query = query.where(Source.id.in_(source_ids))
    rows = session.execute(query.order_by(Chunk.resource_id, Source.id, Chunk.ordinal)).all()
    return [(chunk_id, size) for chunk_id, size in rows]


def chunk_in_revision(
    session: Session, notebook: Notebook, revision_id: str, chunk_id: str
) -> EvidenceChunk | None:
    row = session.execute(_evidence_query(notebook, revision_id).where(Chunk.chunk_id == chunk_id)).first()
    return _to_evidence(*row) if row else None


def transcript_around(session: Session, cited: EvidenceChunk, reach: int = 2) -> list[dict[str, Any]]:
    """A recording's transcript around a cited chunk: the chunks up to ``reach`` before and after
    it in its source, in order, each as ``start``/``end``/``text`` (``cited`` on the cited one).
    Chunks overlap by whole stretches of speech (``spoken``): each is shown once, the cited chunk
    whole, a neighbour without the stretches it shares with the chunk it adjoins."""
    chunk = session.get(Chunk, cited.pk)
    if chunk is None:
        return []
    neighbours = session.scalars(
        select(Chunk)
        .where(
            Chunk.revision_id == chunk.revision_id,
            Chunk.source_id == chunk.source_id,
            Chunk.ordinal.between(chunk.ordinal - reach, chunk.ordinal + reach),
        )
        .order_by(Chunk.ordinal)
    ).all()
    at = next(index for index, neighbour in enumerate(neighbours) if neighbour.id == chunk.id)
    shown = [neighbour.text for neighbour in neighbours]
    for index in range(at - 1, -1, -1):  # before the cited chunk: drop what the next one says again
        shown[index] = _said_before(neighbours[index], neighbours[index + 1].locator.get("start"), shown[index])
    for index in range(at + 1, len(neighbours)):  # after it: drop what the one before said already
        shown[index] = _said_after(neighbours[index], neighbours[index - 1].locator.get("end"))
    return [
        {"start": neighbour.locator.get("start", 0), "end": neighbour.locator.get("end", 0), "text": text,
         **({"cited": True} if index == at else {})}
        for index, (neighbour, text) in enumerate(zip(neighbours, shown))
        if text
    ]


def _said_before(chunk: Chunk, next_start: float | None, text: str) -> str:
    """``text`` (the chunk's, perhaps already cut) up to the first stretch said at or after ``next_start``."""
    later = [span[0] for span in chunk.locator.get("spoken", []) if next_start is not None and span[2] >= next_start]
    return text[: int(later[0])].rstrip() if later else text


def _said_after(chunk: Chunk, previous_end: float | None) -> str:
    """The chunk's text from its first stretch said at or after ``previous_end``."""
    spoken = chunk.locator.get("spoken", [])
    if previous_end is None or not spoken:
        return chunk.text
    new = [span[0] for span in spoken if span[2] >= previous_end]
    return chunk.text[int(new[0]):] if new else ""
