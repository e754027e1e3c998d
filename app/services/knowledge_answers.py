"""Searching and asking a notebook's knowledge (issue #20 item 5; the ranking and the answer are
``pipeline.knowledge.ask``).

A search reads in one transaction: the notes' full-text rows (only a current source version's
notes, and only the version's own when the question is scoped to it) and the active concepts,
each with the document blocks its evidence points to. The answer is composed outside any
transaction, and then everything it rests on is read again: every hit still active at the version
found, every cited page's source version still current. When anything moved (a source deleted,
a note edited, a concept rebuilt) the answer is withdrawn with ``SOURCE_CHANGED`` and no hit:
quoting a page a person just deleted would pass stale knowledge off as current.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from app.errors import ApiError
from app.extensions import Services
from pipeline.answering.sentences import content_terms
from pipeline.fts_query import build_match_query
from pipeline.knowledge.ask import CONCEPT, NOTE, Composed, Hit, Passage, compose, concept_score, interleave
from storage.knowledge import sources
from storage.models import (
    KnowledgeBlock,
    KnowledgeConcept,
    KnowledgeConceptVersion,
    KnowledgeModuleVersion,
    KnowledgeNote,
    KnowledgeNoteVersion,
    KnowledgePage,
    Notebook,
    in_notebook,
)

Key = TypeVar("Key")

# bm25 weights of the notes' columns: title, summary, body.
_NOTE_COLUMNS = (4.0, 2.0, 1.0)


def search(session: Session, notebook: Notebook, question: str, *, scope: str | None, limit: int) -> list[Hit]:
    """What ``question`` finds: notes of ``scope`` (a source version) alone, or notes and
    concepts in turns."""
    if scope is not None:
        _check_scope(session, notebook, scope)
    notes = _notes(session, notebook, question, scope, limit)
    if scope is not None:
        return notes
    return interleave(notes, _concepts(session, notebook, question, limit), limit)


def answer(svc: Services, notebook_id: str, question: str, *, scope: str | None, limit: int) -> tuple[Composed, list[Hit]]:
    """The answer and the hits it was composed from, or ``SOURCE_CHANGED`` when what it rests on
    changed while it was being composed."""
    with svc.db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        hits = search(session, notebook, question, scope=scope, limit=limit)
    composed = compose(question, hits)
    with svc.db.reader() as session:
        if not still_valid(session, hits, composed, scope):
            raise ApiError(409, "SOURCE_CHANGED", "A source this answer rested on changed while it was written: ask again.")
    return composed, hits


def still_valid(session: Session, hits: list[Hit], composed: Composed, scope: str | None) -> bool:
    """Whether every hit is still active at the version it was found at and every cited page's
    source version (and the scope) is still its source's current version (one query each)."""
    found: dict[str, dict[str, str | None]] = {NOTE: {}, CONCEPT: {}}
    for kind, model in ((NOTE, KnowledgeNote), (CONCEPT, KnowledgeConcept)):
        ids = [hit.id for hit in hits if hit.kind == kind]
        if ids:
            found[kind] = dict(session.execute(select(model.id, model.active_version_id).where(
                model.id.in_(ids), model.state == "active")).all())
    if any(found[hit.kind].get(hit.id) != hit.version_id for hit in hits):
        return False
    versions = {citation.passage.source_version_id for citation in composed.citations}
    versions |= {passage.source_version_id for hit in hits if hit.kind == NOTE for passage in hit.passages}
    if scope is not None:
        versions.add(scope)
    return sources.current_among(session, versions) == versions


def _check_scope(session: Session, notebook: Notebook, version_id: str) -> None:
    if sources.version(session, notebook, version_id) is None:
        raise ApiError(404, "KNOWLEDGE_SOURCE_VERSION_NOT_FOUND", "No such source version in this notebook.")
    if not sources.is_current(session, version_id):
        raise ApiError(409, "SOURCE_CHANGED", "That source version was deleted or replaced by a newer one.")


def _notes(session: Session, notebook: Notebook, question: str, scope: str | None, limit: int) -> list[Hit]:
    """The current notes ``question`` finds, best first. Notes of an older version or a deleted
    source keep their full-text rows (a restore needs them), so the rows are joined to the current
    notes before the limit: copies of a document uploaded again never crowd out its live notes."""
    match = build_match_query(question)
    if match is None:
        return []
    where = "knowledge_notes_fts MATCH :match AND knowledge_notes_fts.notebook_id = :notebook"
    if scope is not None:
        where += " AND knowledge_notes_fts.source_version_id = :scope"
    rows = session.execute(text(
        f"SELECT knowledge_notes_fts.note_id, bm25(knowledge_notes_fts, {', '.join(map(str, _NOTE_COLUMNS))}) AS rank "
        "FROM knowledge_notes_fts "
        "JOIN knowledge_notes ON knowledge_notes.id = knowledge_notes_fts.note_id AND knowledge_notes.state = 'active' "
        "AND knowledge_notes.active_version_id = knowledge_notes_fts.note_version_id "
        "JOIN knowledge_sources ON knowledge_sources.active_version_id = knowledge_notes.source_version_id "
        "AND knowledge_sources.state = 'active' "
        f"WHERE {where} ORDER BY rank LIMIT :many"  # noqa: S608 (constants only)
    ), {"match": match, "notebook": notebook.id, "scope": scope, "many": limit}).all()
    found = {note.id: (note, version) for note, version in session.execute(
        select(KnowledgeNote, KnowledgeNoteVersion)
        .join(KnowledgeNoteVersion, KnowledgeNoteVersion.id == KnowledgeNote.active_version_id)
        .where(KnowledgeNote.id.in_([row.note_id for row in rows]))
    )}
    read = _passages_of(session, {row.note_id: [(found[row.note_id][0].source_version_id, item["block_ordinal"])
                                                for item in found[row.note_id][1].evidence] for row in rows})
    return [Hit(NOTE, row.note_id, found[row.note_id][1].id, found[row.note_id][1].title, -row.rank, read[row.note_id])
            for row in rows]


def _concepts(session: Session, notebook: Notebook, question: str, limit: int) -> list[Hit]:
    """The active concepts sharing a term with ``question``, best first."""
    rows = session.execute(
        select(KnowledgeConcept, KnowledgeConceptVersion)
        .join(KnowledgeConceptVersion, KnowledgeConceptVersion.id == KnowledgeConcept.active_version_id)
        .where(in_notebook(KnowledgeConcept, notebook), KnowledgeConcept.state == "active")
    ).all()
    bodies = _module_bodies(session, {module_id for _, version in rows for module_id in version.module_version_ids})
    asked = set(content_terms(question))
    scored = []
    for concept, version in rows:
        points = [point for module_id in sorted(version.module_version_ids) for point in bodies.get(module_id, ())]
        score = concept_score(asked, concept.name, [point["text"] for point in points])
        if score > 0:
            scored.append((score, concept, version, points))
    scored.sort(key=lambda entry: (-entry[0], entry[1].created_at, entry[1].id))
    kept = scored[:limit]
    source_of = _note_sources(session, {point["note_id"] for _, _, _, points in kept for point in points})
    read = _passages_of(session, {concept.id: [(source_of[point["note_id"]], item["block_ordinal"]) for point in points
                                               if point["note_id"] in source_of for item in point["evidence"]]
                                  for _, concept, _, points in kept})
    return [Hit(CONCEPT, concept.id, version.id, concept.name, score, read[concept.id]) for score, concept, version, _ in kept]


def _module_bodies(session: Session, module_version_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The points of every module version named, read in one query (a search scores every
    active concept: one query each would grow with the notebook)."""
    query = select(KnowledgeModuleVersion.id, KnowledgeModuleVersion.body).where(KnowledgeModuleVersion.id.in_(module_version_ids))
    return {module_id: body for module_id, body in session.execute(query)}


def _note_sources(session: Session, note_ids: set[str]) -> dict[str, str]:
    query = select(KnowledgeNote.id, KnowledgeNote.source_version_id).where(KnowledgeNote.id.in_(note_ids))
    return {note_id: version_id for note_id, version_id in session.execute(query)}


def passages(session: Session, refs: Iterable[tuple[str, int]]) -> list[Passage]:
    """The document blocks ``refs`` name (source version, ordinal), once each, in the order named."""
    return list(_passages_of(session, {"": list(refs)})[""])


def _passages_of(session: Session, refs_by: dict[Key, list[tuple[str, int]]]) -> dict[Key, tuple[Passage, ...]]:
    """For each key, the blocks its refs name, once each, in the order named; all of them read
    in two queries (the blocks, then their pages' labels), however many keys there are."""
    read = _passages_by_ref(session, {ref for refs in refs_by.values() for ref in refs})
    return {key: tuple(read[ref] for ref in dict.fromkeys(refs) if ref in read) for key, refs in refs_by.items()}


def _passages_by_ref(session: Session, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], Passage]:
    if not wanted:
        return {}
    versions = {version for version, _ in wanted}
    blocks = {(block.source_version_id, block.ordinal): block for block in session.scalars(select(KnowledgeBlock).where(
        KnowledgeBlock.source_version_id.in_(versions), KnowledgeBlock.ordinal.in_({ordinal for _, ordinal in wanted})))}
    labels = {(page.source_version_id, page.number): page.label for page in session.scalars(
        select(KnowledgePage).where(KnowledgePage.source_version_id.in_(versions),
                                    KnowledgePage.number.in_({block.page for block in blocks.values()})))}
    return {ref: Passage(ref[0], ref[1], block.page, labels.get((ref[0], block.page)), block.text)
            for ref, block in blocks.items() if ref in wanted}
