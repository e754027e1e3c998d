"""Reading atomic notes, their versions and source notes, always within one notebook."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.models import KnowledgeNote, KnowledgeNoteVersion, KnowledgeSourceNote, KnowledgeSourceNoteVersion, Notebook, in_notebook


def get(session: Session, notebook: Notebook, note_id: str) -> KnowledgeNote | None:
    return session.scalar(select(KnowledgeNote).where(in_notebook(KnowledgeNote, notebook), KnowledgeNote.id == note_id))


def version_of(session: Session, note: KnowledgeNote, version_id: str | None) -> KnowledgeNoteVersion | None:
    if version_id is None:
        return None
    version = session.get(KnowledgeNoteVersion, version_id)
    return version if version is not None and version.note_id == note.id else None


def versions_by_id(session: Session, version_ids: list[str]) -> dict[str, KnowledgeNoteVersion]:
    query = select(KnowledgeNoteVersion).where(KnowledgeNoteVersion.id.in_(version_ids))
    return {version.id: version for version in session.scalars(query)}


def version_dict(version: KnowledgeNoteVersion) -> dict[str, Any]:
    """A version as ``pipeline.knowledge`` reads one (the Markdown export, the checks)."""
    return {"title": version.title, "summary": version.summary, "blocks": version.blocks, "claims": version.claims,
            "evidence": version.evidence, "images": version.images}


def source_note_version(session: Session, notebook: Notebook, snapshot_id: str) -> KnowledgeSourceNoteVersion | None:
    return session.scalar(
        select(KnowledgeSourceNoteVersion)
        .join(KnowledgeSourceNote, KnowledgeSourceNote.id == KnowledgeSourceNoteVersion.source_note_id)
        .where(in_notebook(KnowledgeSourceNote, notebook), KnowledgeSourceNoteVersion.id == snapshot_id)
    )
