"""The notes' full-text index: one row per note, holding its active version's text.

A note's new version replaces its row (an edit moves the pointer and the index with it, in the
same transaction), so a search never finds a version that is no longer current.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.models import KnowledgeNote, KnowledgeNoteVersion


def index(session: Session, note: KnowledgeNote, version: KnowledgeNoteVersion) -> None:
    """Make ``version`` the text ``note`` is found by."""
    unindex(session, note.id)
    session.execute(
        text("INSERT INTO knowledge_notes_fts (title, summary, body, note_version_id, note_id, notebook_id, source_version_id) "
             "VALUES (:title, :summary, :body, :version, :note, :notebook, :source_version)"),
        {"title": version.title, "summary": version.summary, "body": body_text(version.blocks),
         "version": version.id, "note": note.id, "notebook": note.notebook_id, "source_version": note.source_version_id},
    )


def unindex(session: Session, note_id: str) -> None:
    session.execute(text("DELETE FROM knowledge_notes_fts WHERE note_id = :note"), {"note": note_id})


def body_text(blocks: list[dict[str, Any]]) -> str:
    return "\n\n".join(block["text"] for block in blocks)
