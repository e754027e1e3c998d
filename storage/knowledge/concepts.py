"""Concepts as rows: which contributions are valid, modules rebuilt from them, concept versions.

A contribution is valid while everything it rests on is current (the seed's rule): it is not
withdrawn, its note is active and its active version is the one contributed, and that note's
source is active with the contributed source version as its active version. Validity is read, not
stored, so deleting a source and restoring it needs no bookkeeping of its own: the same rows count
again. A module is rebuilt from exactly its valid contributions: reusing an old module version
whose inputs match exactly (``inputs_key``), else building a new one; a module left with none is
withdrawn, and a concept left with no active module is withdrawn. A module that cannot be
rebuilt (its builder failed, or found nothing to say) keeps its version where every input of
that version still counts (the change only added), and is otherwise suspended: its version
rests on a source deleted or replaced, and its concept is suspended with it, out of reading and
search until an event rebuilds it (the seed's rule). Every concept whose modules changed gets a
new version pinning its modules' versions, and every tree that shows it a new snapshot with the
same arrangement; a tree showing a concept withdrawn or suspended pins no version of it.
"""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.knowledge.concepts import Candidate, ContributionInput, NoteInput, inputs_key, normalize_name
from storage.knowledge.numbering import next_number
from storage.models import (
    KnowledgeConcept,
    KnowledgeConceptVersion,
    KnowledgeContribution,
    KnowledgeModule,
    KnowledgeModuleVersion,
    KnowledgeNote,
    KnowledgeNoteVersion,
    KnowledgeSource,
    KnowledgeSourceVersion,
    KnowledgeTree,
    KnowledgeTreeVersion,
    Notebook,
    in_notebook,
    utcnow,
)

def candidates(session: Session, notebook: Notebook) -> list[Candidate]:
    """The notebook's concepts that a note may feed (withdrawn ones included: a new contribution
    brings one back), with their modules' keys."""
    query = select(KnowledgeConcept).where(in_notebook(KnowledgeConcept, notebook))
    return _as_candidates(session, list(session.scalars(query.order_by(KnowledgeConcept.created_at, KnowledgeConcept.id))))


def candidates_by_id(session: Session, concept_ids: list[str]) -> list[Candidate]:
    """The concepts named, as ``candidates`` shows them (in id order)."""
    return _as_candidates(session, list(session.scalars(select(KnowledgeConcept).where(
        KnowledgeConcept.id.in_(concept_ids)).order_by(KnowledgeConcept.id))))


def _as_candidates(session: Session, concepts: list[KnowledgeConcept]) -> list[Candidate]:
    modules: dict[str, list[str]] = {}
    for module in session.scalars(select(KnowledgeModule).where(KnowledgeModule.concept_id.in_([c.id for c in concepts]))
                                  .order_by(KnowledgeModule.created_at, KnowledgeModule.id)):
        modules.setdefault(module.concept_id, []).append(module.key)
    return [Candidate(c.id, c.name, tuple(c.aliases), tuple(modules.get(c.id, ()))) for c in concepts]


def note_input(note: KnowledgeNote, version: KnowledgeNoteVersion) -> NoteInput:
    return NoteInput(note.id, version.id, note.source_version_id, version.title, version.summary,
                     tuple(version.blocks), tuple(version.claims), tuple(version.evidence))


def current_notes(session: Session, notebook: Notebook, *, source_version_ids: Iterable[str] | None = None) -> list[NoteInput]:
    """The active versions of the notes of current source versions (all of the notebook's, or of
    ``source_version_ids``), in a stable order."""
    query = (
        select(KnowledgeNote, KnowledgeNoteVersion)
        .join(KnowledgeNoteVersion, KnowledgeNoteVersion.id == KnowledgeNote.active_version_id)
        .join(KnowledgeSource, KnowledgeSource.active_version_id == KnowledgeNote.source_version_id)
        .where(in_notebook(KnowledgeNote, notebook), KnowledgeNote.state == "active", KnowledgeSource.state == "active")
    )
    if source_version_ids is not None:
        query = query.where(KnowledgeNote.source_version_id.in_(list(source_version_ids)))
    return [note_input(note, version) for note, version in session.execute(query.order_by(KnowledgeNote.source_version_id, KnowledgeNote.plan_key))]


def active_versions_of(session: Session, note_ids: list[str]) -> list[tuple[str, str | None, str]]:
    """(note, active version, state) of the notes named, ids only: cheap enough to read again
    inside a write transaction."""
    query = select(KnowledgeNote.id, KnowledgeNote.active_version_id, KnowledgeNote.state).where(KnowledgeNote.id.in_(note_ids))
    return sorted(tuple(row) for row in session.execute(query))


def concept_named(session: Session, notebook: Notebook, name: str) -> KnowledgeConcept | None:
    return session.scalar(select(KnowledgeConcept).where(
        in_notebook(KnowledgeConcept, notebook), KnowledgeConcept.normalized_name == normalize_name(name)
    ).limit(1))


def create_concept(session: Session, notebook: Notebook, name: str) -> KnowledgeConcept:
    concept = KnowledgeConcept(vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
                               name=name, normalized_name=normalize_name(name), aliases=[], state="active")
    session.add(concept)
    session.flush()
    return concept


def module_of(session: Session, concept: KnowledgeConcept, key: str, title: str) -> KnowledgeModule:
    module = session.scalar(select(KnowledgeModule).where(KnowledgeModule.concept_id == concept.id, KnowledgeModule.key == key))
    if module is None:
        module = KnowledgeModule(concept_id=concept.id, key=key, title=title, state="active")
        session.add(module)
        session.flush()
    return module


def contribute(
    session: Session, notebook: Notebook, module: KnowledgeModule, note: NoteInput, block_keys: tuple[str, ...], decision: str,
) -> KnowledgeContribution:
    """The note version's contribution to ``module`` (one per note version and module: processing
    the same event again finds it and changes nothing)."""
    existing = session.scalar(select(KnowledgeContribution).where(
        KnowledgeContribution.module_id == module.id, KnowledgeContribution.note_version_id == note.note_version_id
    ))
    if existing is not None:
        return existing
    contribution = KnowledgeContribution(
        vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
        concept_id=module.concept_id, module_id=module.id, note_id=note.note_id, note_version_id=note.note_version_id,
        source_version_id=note.source_version_id, block_keys=list(block_keys), decision=decision, state="valid",
    )
    session.add(contribution)
    session.flush()
    return contribution


def withdraw_superseded(session: Session, note_id: str, current_version_id: str | None) -> None:
    """Withdraw the contributions of ``note_id``'s other versions (an edit moved its pointer, or
    the note was deleted); the modules they fed are among ``modules_fed_by_note``."""
    query = select(KnowledgeContribution).where(KnowledgeContribution.note_id == note_id, KnowledgeContribution.state == "valid")
    for contribution in session.scalars(query):
        if contribution.note_version_id != current_version_id:
            contribution.state, contribution.invalidated_at = "invalid", utcnow()


def modules_fed_by(session: Session, source_version_ids: list[str]) -> list[str]:
    query = select(KnowledgeContribution.module_id).where(KnowledgeContribution.source_version_id.in_(source_version_ids))
    return sorted(set(session.scalars(query)))


def modules_fed_by_note(session: Session, note_id: str) -> list[str]:
    """Every module any version of the note fed, valid or withdrawn."""
    return sorted(set(session.scalars(select(KnowledgeContribution.module_id).where(KnowledgeContribution.note_id == note_id))))


def valid_contributions(session: Session, module_id: str) -> list[ContributionInput]:
    """The module's contributions that count now (see the module docstring), oldest first."""
    rows = session.execute(
        select(KnowledgeContribution, KnowledgeNote, KnowledgeNoteVersion)
        .join(KnowledgeNote, KnowledgeNote.id == KnowledgeContribution.note_id)
        .join(KnowledgeNoteVersion, KnowledgeNoteVersion.id == KnowledgeContribution.note_version_id)
        .join(KnowledgeSourceVersion, KnowledgeSourceVersion.id == KnowledgeContribution.source_version_id)
        .join(KnowledgeSource, KnowledgeSource.id == KnowledgeSourceVersion.source_id)
        .where(
            KnowledgeContribution.module_id == module_id, KnowledgeContribution.state == "valid",
            KnowledgeNote.state == "active", KnowledgeNote.active_version_id == KnowledgeContribution.note_version_id,
            KnowledgeSource.state == "active", KnowledgeSource.active_version_id == KnowledgeContribution.source_version_id,
        )
        .order_by(KnowledgeContribution.created_at, KnowledgeContribution.id)
    )
    return [ContributionInput(c.id, c.note_version_id, c.source_version_id, tuple(c.block_keys), note_input(note, version))
            for c, note, version in rows]


def settle(session: Session, module: KnowledgeModule) -> str | list[ContributionInput]:
    """What rebuilding ``module`` comes to without building: ``withdrawn`` (no valid
    contribution), ``unchanged`` or ``reused`` (a version of these very inputs exists, now
    active), each done; else the valid contributions a new version must be built from."""
    inputs = valid_contributions(session, module.id)
    if not inputs:
        changed = module.state != "withdrawn"
        module.state = "withdrawn"
        return "withdrawn" if changed else "unchanged"
    key = inputs_key(inputs)
    current = session.get(KnowledgeModuleVersion, module.active_version_id) if module.active_version_id else None
    if current is not None and current.inputs_key == key and module.state == "active":
        return "unchanged"
    reused = session.scalar(select(KnowledgeModuleVersion).where(
        KnowledgeModuleVersion.module_id == module.id, KnowledgeModuleVersion.inputs_key == key
    ).order_by(KnowledgeModuleVersion.number.desc()).limit(1))
    if reused is not None:
        module.active_version_id, module.state = reused.id, "active"
        return "reused"
    return inputs


def store_body(session: Session, module: KnowledgeModule, inputs: list[ContributionInput], body: list[dict]) -> str | None:
    """Store the body built from ``inputs`` (read in an earlier transaction, the builder having
    worked holding no lock): ``built``; ``kept`` or ``suspended`` when there is no body (it could
    not be rebuilt); None when the module's valid contributions are no longer ``inputs`` (a
    change landed meanwhile: build again), or what ``settle`` says when another run got there
    first."""
    settled = settle(session, module)
    if isinstance(settled, str):
        return settled
    if inputs_key(settled) != inputs_key(inputs):
        return None
    if not body:
        current = session.get(KnowledgeModuleVersion, module.active_version_id) if module.active_version_id else None
        holds = current is not None and set(current.contribution_ids) <= {c.contribution_id for c in inputs}
        module.state = "active" if holds else "suspended"
        return "kept" if holds else "suspended"
    version = KnowledgeModuleVersion(
        module_id=module.id, number=next_number(session, KnowledgeModuleVersion.number, KnowledgeModuleVersion.module_id == module.id),
        body=body, inputs_key=inputs_key(inputs), contribution_ids=[c.contribution_id for c in inputs],
    )
    session.add(version)
    session.flush()
    module.active_version_id, module.state = version.id, "active"
    return "built"


def publish_concept(session: Session, concept: KnowledgeConcept, event_id: str | None) -> str:
    """A new concept version pinning its active modules' versions when they changed (the concept
    suspended while a module is, withdrawn when none is left); the trees that show it follow.
    What happened."""
    modules = list(session.scalars(select(KnowledgeModule).where(KnowledgeModule.concept_id == concept.id)
                                   .order_by(KnowledgeModule.created_at, KnowledgeModule.id)))
    pinned = [m.active_version_id for m in modules if m.state == "active" and m.active_version_id]
    held = "suspended" if any(m.state == "suspended" for m in modules) else "withdrawn" if not pinned else None
    if held is not None:
        changed = concept.state != held
        concept.state = held
        if changed:
            _refresh_trees(session, concept)
        return held if changed else "unchanged"
    current = session.get(KnowledgeConceptVersion, concept.active_version_id) if concept.active_version_id else None
    if current is not None and current.module_version_ids == pinned and concept.state == "active":
        return "unchanged"
    version = KnowledgeConceptVersion(
        concept_id=concept.id, number=next_number(session, KnowledgeConceptVersion.number, KnowledgeConceptVersion.concept_id == concept.id),
        module_version_ids=pinned, event_id=event_id,
    )
    session.add(version)
    session.flush()
    concept.active_version_id, concept.state = version.id, "active"
    _refresh_trees(session, concept)
    return "published"


def shown_version(concept: KnowledgeConcept) -> str | None:
    """The version of ``concept`` a tree pins: its active one, none while it is withdrawn or suspended."""
    return concept.active_version_id if concept.state == "active" else None


def _refresh_trees(session: Session, concept: KnowledgeConcept) -> None:
    """Trees whose current snapshot shows ``concept`` get a new snapshot pinning the version it
    shows now, every node where it was."""
    pin = shown_version(concept)
    trees = session.scalars(select(KnowledgeTree).where(KnowledgeTree.notebook_id == concept.notebook_id))
    for tree in trees:
        current = session.get(KnowledgeTreeVersion, tree.active_version_id) if tree.active_version_id else None
        if current is None or not any(node.get("concept_id") == concept.id and node.get("concept_version_id") != pin
                                      for node in current.nodes):
            continue
        nodes = [{**node, "concept_version_id": pin} if node.get("concept_id") == concept.id else node
                 for node in current.nodes]
        snapshot = KnowledgeTreeVersion(tree_id=tree.id, number=next_number(
            session, KnowledgeTreeVersion.number, KnowledgeTreeVersion.tree_id == tree.id), nodes=nodes)
        session.add(snapshot)
        session.flush()
        tree.active_version_id = snapshot.id

