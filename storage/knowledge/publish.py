"""Publish a source version's checked notes: one transaction, after re-checking the source.

The caller's transaction holds the write lock from its first statement, so the check that the
source is still active and this job's version still its active version cannot go stale before
the commit: a deletion or a newer version either came first (nothing is published) or waits.
Written together: the version's pages, blocks and figures (once), each unit's note and a new note
version, the source note's new version pinning exactly those note versions in reading order, and
the notes' full-text rows. A publish again (a restarted job) never writes over a person's work: a
note someone edited keeps its version, one someone deleted stays out; and a note an earlier
publish made for a unit this one leaves out (planned or checked otherwise this time) is
``dropped``: out of the search, and feeding no concept, as it is out of the source note.
"""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.knowledge.types import NoteDraft, ParsedDocument, UnitPlan
from storage.knowledge import note_index
from storage.knowledge.numbering import next_number
from storage.models import (
    KnowledgeAsset,
    KnowledgeBlock,
    KnowledgeJob,
    KnowledgeNote,
    KnowledgeNoteVersion,
    KnowledgePage,
    KnowledgeSourceNote,
    KnowledgeSourceNoteVersion,
)


def publish(
    session: Session, job: KnowledgeJob, document: ParsedDocument, plans: list[UnitPlan], drafts: dict[str, NoteDraft],
) -> KnowledgeSourceNoteVersion:
    """The source note's new version over the units of ``plans`` that have a draft in ``drafts``
    (the ones that passed their checks), in plan order."""
    _store_document(session, job.source_version_id, document)
    toc = []
    for plan in plans:
        draft = drafts.get(plan.key)
        if draft is None:
            continue
        kept = _kept(session, job, plan.key)
        if kept is False:
            continue
        note, version = kept or _note_version(session, job, plan.key, draft)
        if note.state == "dropped":  # a person's note whose unit an earlier restart left out is back
            note.state = "active"
            note_index.index(session, note, version)
        toc.append({"title": version.title, "level": len(plan.path) or 1, "path": list(plan.path), "plan_key": plan.key,
                    "note_id": note.id, "note_version_id": version.id})
    _drop_left_out(session, job, {entry["note_id"] for entry in toc})
    source_note = session.scalar(select(KnowledgeSourceNote).where(KnowledgeSourceNote.source_version_id == job.source_version_id))
    if source_note is None:
        source_note = KnowledgeSourceNote(vault_hash=job.vault_hash, workspace_id=job.workspace_id, notebook_id=job.notebook_id,
                                          source_version_id=job.source_version_id)
        session.add(source_note)
        session.flush()
    snapshot = KnowledgeSourceNoteVersion(source_note_id=source_note.id, number=next_number(
        session, KnowledgeSourceNoteVersion.number, KnowledgeSourceNoteVersion.source_note_id == source_note.id), toc=toc, job_id=job.id)
    session.add(snapshot)
    session.flush()
    source_note.active_version_id = snapshot.id
    return snapshot


def _drop_left_out(session: Session, job: KnowledgeJob, published: set[str]) -> None:
    """The version's active notes that this publish leaves out become ``dropped``."""
    query = select(KnowledgeNote).where(KnowledgeNote.source_version_id == job.source_version_id, KnowledgeNote.state == "active")
    for note in session.scalars(query):
        if note.id not in published:
            note.state = "dropped"
            note_index.unindex(session, note.id)


def _kept(session: Session, job: KnowledgeJob, plan_key: str) -> tuple[KnowledgeNote, KnowledgeNoteVersion] | bool | None:
    """What a publish again (a job restarted) keeps of the unit's note: False when a person
    deleted it (it stays deleted), the note and its version when its current version is a
    person's or the agent's (an engine never writes over their edit), None to write it anew."""
    note = session.scalar(select(KnowledgeNote).where(
        KnowledgeNote.source_version_id == job.source_version_id, KnowledgeNote.plan_key == plan_key
    ))
    if note is None or note.active_version_id is None:
        return None
    if note.state == "deleted":
        return False
    version = session.get(KnowledgeNoteVersion, note.active_version_id)
    return None if version.author.startswith("engine:") else (note, version)


def _note_version(session: Session, job: KnowledgeJob, plan_key: str, draft: NoteDraft) -> tuple[KnowledgeNote, KnowledgeNoteVersion]:
    note = session.scalar(select(KnowledgeNote).where(
        KnowledgeNote.source_version_id == job.source_version_id, KnowledgeNote.plan_key == plan_key
    ))
    if note is None:
        note = KnowledgeNote(vault_hash=job.vault_hash, workspace_id=job.workspace_id, notebook_id=job.notebook_id,
                             source_version_id=job.source_version_id, plan_key=plan_key, state="active")
        session.add(note)
        session.flush()
    data = draft.to_dict()
    version = KnowledgeNoteVersion(
        note_id=note.id, number=next_number(session, KnowledgeNoteVersion.number, KnowledgeNoteVersion.note_id == note.id),
        title=draft.title, summary=draft.summary, blocks=data["blocks"], claims=data["claims"], evidence=data["evidence"],
        images=data["images"], author=f"engine:{job.engine}", job_id=job.id,
    )
    session.add(version)
    session.flush()
    note.active_version_id, note.state = version.id, "active"
    note_index.index(session, note, version)
    return note, version


def _store_document(session: Session, version_id: str, document: ParsedDocument) -> None:
    """The version's pages, blocks and figures, unless an earlier publish of it stored them."""
    if not document.pages or session.get(KnowledgePage, (version_id, document.pages[0].number)) is not None:
        return
    session.add_all(KnowledgePage(source_version_id=version_id, number=page.number, label=page.label) for page in document.pages)
    session.add_all(
        KnowledgeBlock(source_version_id=version_id, ordinal=block.ordinal, page=block.page, kind=block.kind,
                       level=block.level, text=block.text, box=list(block.box) if block.box else None)
        for block in document.blocks
    )
    session.add_all(
        KnowledgeAsset(source_version_id=version_id, key=asset.key, page=asset.page, kind=asset.kind,
                       caption=asset.caption, box=list(asset.box) if asset.box else None)
        for asset in document.assets
    )

