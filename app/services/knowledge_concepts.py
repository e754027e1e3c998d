"""Concepts that follow their sources: what one change event does (docs/decisions/0021).

- ``note_published``: each note of the source version is offered to the concept engine with at
  most ``MAX_CANDIDATES`` candidate concepts and the key terms notes of *other* sources share;
  the engine's decisions (at most ``MAX_DECISIONS``) are checked by code (``validate``) before any
  is stored as a contribution. A concept a note founds on a shared term is fed by the other
  sources' notes that have the term too, so it is cross-source from its first version.
- ``note_edited``/``note_deleted``: the note's contributions of other versions are withdrawn; an
  edited note's new version is offered as a published note is (a block a person rewrote lost its
  evidence, so it feeds nothing until its wording is evidenced again).
- ``source_deleted``/``source_restored``/``source_replaced``: nothing to store; validity is read
  from the source (a replaced version's contributions stopped counting when its source's pointer
  moved to the new version, whose notes feed by their own ``note_published``).
Then every module those touched is rebuilt from its valid contributions (an old version reused
when its inputs match exactly), and each concept of theirs republished or withdrawn.

An event runs in one write transaction: the offline engine takes milliseconds, and two events of
one notebook must not rebuild one module at once.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from pipeline.knowledge.concepts import (
    Candidate,
    Decision,
    NoteInput,
    OfflineConceptEngine,
    candidates_for,
    key_terms,
    normalize_name,
    validate,
)
from storage.knowledge import concepts, sources
from storage.models import KnowledgeConcept, KnowledgeEvent, KnowledgeModule, KnowledgeNote, KnowledgeSourceVersion, Notebook

# Decisions that store nothing.
_IDLE = ("no_change", "invalid", "conflict")


def process(session: Session, notebook: Notebook, event: KnowledgeEvent, engine: OfflineConceptEngine) -> dict[str, Any]:
    """Apply ``event``; what changed, by module and by concept."""
    subject = event.subject
    problems: list[str] = []
    if event.kind == "note_published":
        affected = _published(session, notebook, subject["source_version_id"], engine, problems)
    elif event.kind in ("note_edited", "note_deleted"):
        affected = _note_changed(session, notebook, subject["note_id"], engine, problems)
    else:
        versions = [v.id for v in sources.versions_of(session, subject["source_id"])]
        affected = set(concepts.modules_fed_by(session, versions))
    modules = {module_id: concepts.rebuild(session, session.get(KnowledgeModule, module_id), engine.build_module)
               for module_id in sorted(affected)}
    touched = sorted({session.get(KnowledgeModule, module_id).concept_id for module_id in modules})
    published = {concept_id: concepts.publish_concept(session, session.get(KnowledgeConcept, concept_id), event.id)
                 for concept_id in touched}
    return {"modules": modules, "concepts": published, "problems": problems[:20]}


def _note_changed(session: Session, notebook: Notebook, note_id: str, engine: OfflineConceptEngine, problems: list[str]) -> set[str]:
    """Follow the note as it is *now*, whatever version the event names: an event may arrive late
    (a resend after a newer edit's event ran), and acting on its own version would withdraw the
    current one's contributions. Every other version's contributions are withdrawn, and the
    current version, if the note is still active, is offered as a published note is (a block a
    person rewrote lost its evidence, so only evidenced blocks may feed)."""
    note = session.get(KnowledgeNote, note_id)
    current_version = note.active_version_id if note is not None and note.state == "active" else None
    affected = set(concepts.withdraw_superseded(session, note_id, current_version))
    current = concepts.current_notes(session, notebook)
    edited = [found for found in current if found.note_version_id == current_version]
    if edited:
        others = [found for found in current if found.source_version_id != edited[0].source_version_id]
        affected |= _offer(session, notebook, edited, others, engine, problems)
    return affected


def _published(session: Session, notebook: Notebook, version_id: str, engine: OfflineConceptEngine, problems: list[str]) -> set[str]:
    version = session.get(KnowledgeSourceVersion, version_id)
    superseded = [v.id for v in sources.versions_of(session, version.source_id) if v.id != version_id]
    affected = set(concepts.modules_fed_by(session, superseded))  # an older version's contributions stop counting
    others = [note for note in concepts.current_notes(session, notebook) if note.source_version_id != version_id]
    offered_notes = concepts.current_notes(session, notebook, source_version_ids=[version_id])
    return affected | _offer(session, notebook, offered_notes, others, engine, problems)


def _offer(
    session: Session, notebook: Notebook, offered_notes: list[NoteInput], others: list[NoteInput], engine: OfflineConceptEngine,
    problems: list[str],
) -> set[str]:
    """Offer each of ``offered_notes`` to the engine (``others``: the other sources' current
    notes, whose terms a new concept must share); the modules fed."""
    affected: set[str] = set()
    terms_of = {note.note_id: {normalize_name(term) for term in key_terms(note)} for note in others}
    shared = set().union(*terms_of.values()) if terms_of else set()
    for note in offered_notes:
        offered = candidates_for(note, concepts.candidates(session, notebook))
        decisions, found = validate(note, offered, engine.decide(note, offered, shared))
        problems.extend(f"{note.note_id}: {problem}" for problem in found)
        for decision in decisions:
            if decision.kind in _IDLE:
                continue
            module = _store(session, notebook, note, decision)
            affected.add(module.id)
            if decision.kind == "new_concept":
                affected |= _backfill(session, notebook, module, others, terms_of, engine)
    return affected


def _store(session: Session, notebook: Notebook, note: NoteInput, decision: Decision) -> KnowledgeModule:
    concept = session.get(KnowledgeConcept, decision.concept_id) if decision.concept_id else None
    if concept is None:  # a name already taken is the same concept: identities are never doubled
        concept = concepts.concept_named(session, notebook, decision.concept_name) or concepts.create_concept(
            session, notebook, decision.concept_name)
    module = concepts.module_of(session, concept, decision.module_key, decision.module_title)
    concepts.contribute(session, notebook, module, note, decision.block_keys, decision.kind)
    return module


def _backfill(
    session: Session, notebook: Notebook, module: KnowledgeModule, others: list[NoteInput],
    terms_of: dict[str, set[str]], engine: OfflineConceptEngine,
) -> set[str]:
    """The other sources' notes that share a new concept's term feed it too (checked by code)."""
    concept = session.get(KnowledgeConcept, module.concept_id)
    offered = [Candidate(concept.id, concept.name, tuple(concept.aliases), (module.key,))]
    fed = set()
    for note in others:
        if concept.normalized_name not in terms_of[note.note_id]:
            continue
        decisions, _ = validate(note, offered, engine.decide(note, offered, set()))
        for decision in decisions:
            if decision.kind not in _IDLE and decision.concept_id == concept.id:
                fed.add(_store(session, notebook, note, decision).id)
    return fed
