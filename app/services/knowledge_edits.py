"""Editing a note's block: one path for people and for the agent (issue #20 item 6).

Read the note, then send ``expected_version_id`` (the version read), ``block_key`` and the new
text. In one transaction: a new note version keeping every untouched block's evidence
(``pipeline.knowledge.edit``), the note's pointer moved to it, its full-text row replaced, a new
source note snapshot pinning it where the old one was, and (with ``GNOSI_KNOWLEDGE_AUTO_SYNC``)
the ``note_edited`` event the concepts follow. The same text again is ``UNCHANGED`` and writes
nothing; a pointer that moved since the read is ``VERSION_CONFLICT``: the writer reads again and
decides anew, never overwriting an edit it did not see.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.errors import ApiError
from pipeline.knowledge.edit import Revised, revise
from storage.knowledge import events, note_index, notes, sources
from storage.knowledge.numbering import next_number
from storage.models import KnowledgeNote, KnowledgeNoteVersion, KnowledgeSourceNote, KnowledgeSourceNoteVersion, Notebook, utcnow

UPDATED, UNCHANGED = "UPDATED", "UNCHANGED"


@dataclass(frozen=True)
class Edited:
    status: str
    note: KnowledgeNote
    version: KnowledgeNoteVersion
    source_note_version_id: str | None
    event_id: str | None


def edit_block(
    session: Session, notebook: Notebook, note_id: str, *, expected_version_id: str, block_key: str, text: str,
    author: str, auto_sync: bool,
) -> Edited:
    """Rewrite block ``block_key`` of the note's version ``expected_version_id`` (see the module
    docstring); the caller's transaction holds the write lock, so the version check cannot go
    stale before the commit."""
    note, current, revised = planned_edit(session, notebook, note_id, expected_version_id=expected_version_id,
                                          block_key=block_key, text=text)
    if revised is None:
        return Edited(UNCHANGED, note, current, None, None)
    version = KnowledgeNoteVersion(
        note_id=note.id, number=next_number(session, KnowledgeNoteVersion.number, KnowledgeNoteVersion.note_id == note.id),
        title=current.title, summary=current.summary, blocks=revised.blocks, claims=revised.claims,
        evidence=revised.evidence, images=current.images, author=author, job_id=None,
    )
    session.add(version)
    session.flush()
    note.active_version_id = version.id
    note_index.index(session, note, version)
    snapshot_id = _pin(session, note, version)
    event_id = None
    if auto_sync:
        event, _ = events.enqueue(session, notebook, "note_edited", {"note_id": note.id, "note_version_id": version.id},
                                  f"note_edited:{version.id}")
        event_id = event.id
    return Edited(UPDATED, note, version, snapshot_id, event_id)


def planned_edit(
    session: Session, notebook: Notebook, note_id: str, *, expected_version_id: str, block_key: str, text: str,
) -> tuple[KnowledgeNote, KnowledgeNoteVersion, Revised | None]:
    """The note, its current version and what the edit would make of it (None: the same text), or
    the refusal the edit would meet; the agent's proposal asks this before it asks for approval."""
    note = notes.get(session, notebook, note_id)
    if note is None:
        raise ApiError(404, "NOTE_NOT_FOUND", "No such note in this notebook.")
    if note.state != "active":
        raise ApiError(409, "NOTE_DELETED", "The note was deleted, or left out when its source note was made again: "
                       "it can be read, not edited.")
    if not sources.is_current(session, note.source_version_id):
        raise ApiError(409, "SOURCE_CHANGED", "The note's source was deleted or has a newer version: this note is history now.")
    if note.active_version_id != expected_version_id:
        raise ApiError(409, "VERSION_CONFLICT", "The note has a newer version than the one you read: read it again.",
                       current_version_id=note.active_version_id)
    current = session.get(KnowledgeNoteVersion, note.active_version_id)
    try:
        return note, current, revise(current.blocks, current.claims, current.evidence, block_key, text)
    except KeyError:
        raise ApiError(404, "BLOCK_NOT_FOUND", f"The note's version has no block {block_key!r}.", field="block_key") from None


def delete_note(session: Session, notebook: Notebook, note_id: str) -> Edited:
    """The note leaves its source note (a new snapshot without it) and the search; its versions
    stay as history, and the ``note_deleted`` event withdraws what it fed (always sent: a deletion
    is maintenance, whatever ``GNOSI_KNOWLEDGE_AUTO_SYNC`` says)."""
    note = notes.get(session, notebook, note_id)
    if note is None:
        raise ApiError(404, "NOTE_NOT_FOUND", "No such note in this notebook.")
    version = session.get(KnowledgeNoteVersion, note.active_version_id)
    if note.state == "deleted":
        return Edited(UNCHANGED, note, version, None, None)
    note.state = "deleted"
    note_index.unindex(session, note.id)
    snapshot_id = _pin(session, note, None)
    event, _ = events.enqueue(session, notebook, "note_deleted", {"note_id": note.id, "note_version_id": None},
                              f"note_deleted:{note.id}:{utcnow().isoformat()}")
    return Edited(UPDATED, note, version, snapshot_id, event.id)


def _pin(session: Session, note: KnowledgeNote, version: KnowledgeNoteVersion | None) -> str | None:
    """A new snapshot of the note's source note, pinning ``version`` where the note was (or
    without the note, for None)."""
    source_note = session.scalar(select(KnowledgeSourceNote).where(KnowledgeSourceNote.source_version_id == note.source_version_id))
    current = session.get(KnowledgeSourceNoteVersion, source_note.active_version_id) if source_note else None
    if current is None or not any(entry["note_id"] == note.id for entry in current.toc):
        return None
    toc = [entry if entry["note_id"] != note.id else {**entry, "note_version_id": version.id, "title": version.title}
           for entry in current.toc if version is not None or entry["note_id"] != note.id]
    snapshot = KnowledgeSourceNoteVersion(source_note_id=source_note.id, number=next_number(
        session, KnowledgeSourceNoteVersion.number, KnowledgeSourceNoteVersion.source_note_id == source_note.id), toc=toc)
    session.add(snapshot)
    session.flush()
    source_note.active_version_id = snapshot.id
    return snapshot.id
