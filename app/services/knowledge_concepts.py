"""Concepts that follow their sources: what one change event does (docs/decisions/0021).

- ``note_published``: each note of the source version is offered to the concept engine with at
  most ``MAX_CANDIDATES`` candidate concepts and the key terms notes of *other* sources share;
  the engine's decisions (at most ``MAX_DECISIONS``) are checked by code (``validate``) before any
  is stored as a contribution. A concept a note founds on a shared term is offered to the other
  sources' notes that have the term too, so it is cross-source from its first version.
- ``note_edited``/``note_deleted``: the note's contributions of other versions are withdrawn; an
  edited note's new version is offered as a published note is (a block a person rewrote lost its
  evidence, so it feeds nothing until its wording is evidenced again).
- ``source_deleted``/``source_restored``/``source_replaced``: nothing to decide; validity is read
  from the source (a replaced version's contributions stopped counting when its source's pointer
  moved to the new version, whose notes feed by their own ``note_published``).
Then every module those touched is rebuilt from its valid contributions (an old version reused
when its inputs match exactly), and each concept of theirs republished or withdrawn.

An engine may be a model that takes seconds a request, so it never works inside a write
transaction (every writer of the database would wait on it): decisions are made on what one
read saw, then stored in a short write transaction only if the offered notes and their
candidates are still what was read (else decided again), and that transaction marks the event's
decisions stored; a module is built from the contributions one transaction read and stored only
if they are still its valid ones (else built again). A message that takes the event up again
after a crash or a retry rebuilds what the stored decisions touched, deciding nothing again;
contributions are one per note version and module, and a module built from the same inputs is
reused, so nothing changes twice. Every write transaction first checks that this message still
holds the event (``Guard``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.orm import Session

from pipeline.knowledge.concepts import (
    Candidate,
    ConceptEngine,
    Decision,
    NoteInput,
    candidates_for,
    key_terms,
    normalize_name,
    validate,
)
from pipeline.types import PipelineError
from storage.db import Database
from storage.knowledge import concepts, events, sources
from storage.models import KnowledgeConcept, KnowledgeEvent, KnowledgeModule, KnowledgeNote, KnowledgeSourceVersion, Notebook

# Decisions that store nothing.
_IDLE = ("no_change", "invalid", "conflict")
# How often a decision or a build is made again because what it rests on changed under it.
MAX_TRIES = 3
# A concept a note founds in this event, before it has an id.
_FOUNDED = "founded:"
# Failures that pass: the task tries the event again (what was stored stays stored).
TRANSIENT = ("LLM_UNAVAILABLE", "KNOWLEDGE_BUSY")


class EventLost(Exception):
    """Another message took the event over (the sweeper's, after this worker's lease lapsed):
    this one stops, storing nothing more."""


class Guard(Protocol):
    """The event's lease as the message working on it holds it."""

    def beat(self) -> None:
        """Before each request to an engine: keep the lease, or raise ``EventLost``."""

    def holds(self, session: Session) -> None:
        """Inside each write transaction: raise ``EventLost`` unless the event is still ours."""


class Unguarded:
    """For a caller that holds no lease (a test driving one step)."""

    def beat(self) -> None:
        return None

    def holds(self, session: Session) -> None:
        return None


@dataclass(frozen=True)
class EventRef:
    """The event as its claim read it; ``stored``: the modules its stored decisions touched,
    when a message before this one got that far."""

    id: str
    notebook_id: str
    kind: str
    subject: dict[str, Any]
    stored: tuple[str, ...] | None = None


@dataclass
class _Reading:
    """What one read saw: the notes to offer and the candidates of each, the other sources' notes,
    the modules the event touches without a decision, and a digest of what decisions rest on."""

    offered: list[NoteInput] = field(default_factory=list)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    others: list[NoteInput] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    digest: str = ""


def process(db: Database, event: EventRef, engine: ConceptEngine, guard: Guard = Unguarded(), *,
            final: bool = True) -> dict[str, Any]:
    """Apply ``event``; what changed, by module and by concept. Unless ``final`` (the task's last
    try), a model that cannot be reached raises for the task to try again."""
    problems: list[str] = []
    affected = set(event.stored) if event.stored is not None else None
    for _ in range(MAX_TRIES if affected is None else 0):
        with db.reader() as session:
            reading = _read(session, session.get(Notebook, event.notebook_id), event)
        decided, found = _decide(reading, engine, guard)
        with db.session() as session:
            guard.holds(session)
            notebook = session.get(Notebook, event.notebook_id)
            if reading.offered and _digest(session, reading.offered, reading.candidates) != reading.digest:
                continue  # an offered note or one of its candidates changed while the engine decided
            affected = reading.touched | _store(session, notebook, event, decided)
            events.mark_stored(session.get(KnowledgeEvent, event.id), sorted(affected))
            problems = found
            break
    if affected is None:
        raise PipelineError("KNOWLEDGE_BUSY", f"The notes kept changing while {MAX_TRIES} decisions were made.")
    modules = {module_id: rebuild_module(db, module_id, engine, guard, problems, final=final) for module_id in sorted(affected)}
    with db.session() as session:
        guard.holds(session)
        touched = sorted({session.get(KnowledgeModule, module_id).concept_id for module_id in modules})
        published = {concept_id: concepts.publish_concept(session, session.get(KnowledgeConcept, concept_id), event.id)
                     for concept_id in touched}
    return {"modules": modules, "concepts": published, "problems": list(dict.fromkeys(problems))[:20]}


def rebuild_module(db: Database, module_id: str, engine: ConceptEngine, guard: Guard = Unguarded(),
                   problems: list[str] | None = None, *, final: bool = True) -> str:
    """Rebuild one module from its valid contributions (``concepts.settle``/``store_body``): the
    engine builds and judges outside any transaction. A module it cannot build (a model that wrote
    nothing that holds, a module its judge refused; a model down, on the last try) is kept or
    suspended, and ``problems`` says why; a later event rebuilds it."""
    for _ in range(MAX_TRIES):
        with db.session() as session:
            guard.holds(session)
            module = session.get(KnowledgeModule, module_id)
            settled = concepts.settle(session, module)
            if isinstance(settled, str):
                return settled
            title, concept = module.title, session.get(KnowledgeConcept, module.concept_id).name
        body, refused = _built(engine, guard, title, concept, settled, final=final)
        with db.session() as session:
            guard.holds(session)
            outcome = concepts.store_body(session, session.get(KnowledgeModule, module_id), settled, body)
        if outcome is not None:
            if refused and problems is not None:
                problems.append(f"{concept} / {title}: {refused}")
            return outcome
    raise PipelineError("KNOWLEDGE_BUSY", f"Module {module_id}'s contributions kept changing while it was built.")


def _built(engine: ConceptEngine, guard: Guard, title: str, concept: str, inputs: list[Any], *,
           final: bool) -> tuple[list[dict[str, Any]], str]:
    """The module's body and judged, or no body and why not."""
    try:
        guard.beat()
        body = engine.build_module(title, inputs, concept=concept)
        guard.beat()
        problems = engine.judge_module(title, inputs, body, concept=concept) if body else ()
    except PipelineError as err:
        if err.code in TRANSIENT and not final:
            raise
        return [], err.message
    if problems:
        return [], "the module judge refused it: " + " ".join(problems)
    return body, "" if body else "nothing its claims support was written"


def _read(session: Session, notebook: Notebook, event: EventRef) -> _Reading:
    subject = event.subject
    reading = _Reading()
    current = concepts.current_notes(session, notebook)
    if event.kind == "note_published":
        version = session.get(KnowledgeSourceVersion, subject["source_version_id"])
        # An older version's contributions stop counting, and so do the notes of this one that a
        # publish again left out (``dropped``): every module the source fed is looked at.
        reading.touched = set(concepts.modules_fed_by(session, [v.id for v in sources.versions_of(session, version.source_id)]))
        reading.offered = [note for note in current if note.source_version_id == version.id]
    elif event.kind in ("note_edited", "note_deleted"):
        # The note as it is *now*, whatever version the event names: an event may arrive late (a
        # resend after a newer edit's event ran), and acting on its own version would withdraw
        # the current one's contributions. Every module any version of it fed is looked at.
        note = session.get(KnowledgeNote, subject["note_id"])
        active = note.active_version_id if note is not None and note.state == "active" else None
        reading.touched = set(concepts.modules_fed_by_note(session, subject["note_id"]))
        reading.offered = [found for found in current if found.note_version_id == active]
    else:
        reading.touched = set(concepts.modules_fed_by(session, [v.id for v in sources.versions_of(session, subject["source_id"])]))
    if reading.offered:
        offered_source = reading.offered[0].source_version_id
        reading.others = [note for note in current if note.source_version_id != offered_source]
        every = concepts.candidates(session, notebook)
        reading.candidates = {note.note_id: candidates_for(note, every) for note in reading.offered}
        reading.digest = _digest(session, reading.offered, reading.candidates)
    return reading


def _decide(reading: _Reading, engine: ConceptEngine, guard: Guard) -> tuple[list[tuple[NoteInput, Decision]], list[str]]:
    """The engine's checked decisions for every offered note, then for the other sources' notes
    that share the term of a concept an offered note founds (that concept their one candidate,
    named ``founded:<name>`` until it is stored); and the problems found, for the event's result."""
    terms_of = {note.note_id: {normalize_name(term) for term in key_terms(note)} for note in reading.others}
    shared = set().union(*terms_of.values()) if terms_of else set()
    decided: list[tuple[NoteInput, Decision]] = []
    problems: list[str] = []
    founded: dict[str, Decision] = {}
    for note in reading.offered:
        for decision in _checked(engine, note, reading.candidates[note.note_id], shared, problems, guard):
            decided.append((note, decision))
            if decision.kind == "new_concept":
                founded.setdefault(normalize_name(decision.concept_name), decision)
    for name, decision in founded.items():
        placeholder = Candidate(_FOUNDED + name, decision.concept_name, (), (decision.module_key,))
        for note in reading.others:
            if name in terms_of[note.note_id]:
                decided.extend((note, found) for found in _checked(engine, note, [placeholder], set(), problems, guard)
                               if found.concept_id == placeholder.concept_id)
    return decided, problems


def _checked(engine: ConceptEngine, note: NoteInput, offered: list[Candidate], shared: set[str], problems: list[str],
             guard: Guard) -> list[Decision]:
    """The engine's decisions for ``note`` that code accepts and that store something; what was
    wrong with the others, and what a model flagged for review, become problems (named by the
    note's title, for a person to find it). A model whose answer cannot be read decides nothing
    for this note (a problem too); one that cannot be reached stops the event, which the task
    tries again."""
    guard.beat()
    try:
        made = engine.decide(note, offered, shared)
    except PipelineError as err:
        if err.code in TRANSIENT:
            raise
        problems.append(f"{note.title}: the decision could not be read: {err.message}")
        return []
    decisions, found = validate(note, offered, made)
    problems.extend(f"{note.title}: {problem}" for problem in found)
    problems.extend(f"{note.title}: to review ({d.kind}): {d.reason or 'no reason given'}" for d in decisions if d.kind in ("invalid", "conflict"))
    return [decision for decision in decisions if decision.kind not in _IDLE]


def _store(session: Session, notebook: Notebook, event: EventRef, decided: list[tuple[NoteInput, Decision]]) -> set[str]:
    """Store the decided contributions (after withdrawing an edited or deleted note's superseded
    ones); the modules fed."""
    affected: set[str] = set()
    if event.kind in ("note_edited", "note_deleted"):
        note = session.get(KnowledgeNote, event.subject["note_id"])
        active = note.active_version_id if note is not None and note.state == "active" else None
        concepts.withdraw_superseded(session, event.subject["note_id"], active)
    for note, decision in decided:
        concept = None
        if decision.concept_id is not None and not decision.concept_id.startswith(_FOUNDED):
            concept = session.get(KnowledgeConcept, decision.concept_id)
        if concept is None:  # a name already taken is the same concept: identities are never doubled
            concept = concepts.concept_named(session, notebook, decision.concept_name) or concepts.create_concept(
                session, notebook, decision.concept_name)
        module = concepts.module_of(session, concept, decision.module_key, decision.module_title)
        concepts.contribute(session, notebook, module, note, decision.block_keys, decision.kind)
        affected.add(module.id)
    return affected


def _digest(session: Session, offered: list[NoteInput], candidates: dict[str, list[Candidate]]) -> str:
    """What the decisions rest on, read by ids and names only (it is read again inside the write
    transaction): the offered notes' active versions, and the candidates offered to them with
    their names and modules. A change elsewhere in the notebook (a concept founded by another
    source's event) does not make them decide again: a name founded twice is one concept anyway."""
    notes = concepts.active_versions_of(session, [note.note_id for note in offered])
    ids = sorted({c.concept_id for found in candidates.values() for c in found})
    named = [(c.concept_id, c.name, list(c.aliases), list(c.module_keys)) for c in concepts.candidates_by_id(session, ids)]
    return hashlib.sha256(json.dumps([notes, named], separators=(",", ":")).encode()).hexdigest()
