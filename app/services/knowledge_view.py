"""The knowledge layer as JSON: sources with their versions, jobs with their stages and coverage
notes, source notes (tables of contents pinned to note versions), notes with evidence that opens
the page it came from."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.timestamps import iso
from pipeline.knowledge.ask import Composed, Hit
from pipeline.knowledge.types import STAGES
from storage.knowledge import jobs, sources
from storage.models import (
    KnowledgeBlock,
    KnowledgeJob,
    KnowledgeNote,
    KnowledgeNoteVersion,
    KnowledgeSource,
    KnowledgeSourceNote,
    KnowledgeSourceNoteVersion,
    KnowledgeSourceVersion,
)


def job_json(session: Session, job: KnowledgeJob | None, progress: jobs.Progress | None = None) -> dict[str, Any] | None:
    """``progress``: the job's, when the caller counted several jobs' at once."""
    if job is None:
        return None
    units = progress or jobs.progress(session, [job.id]).get(job.id, jobs.Progress())
    return {
        "id": job.id, "source_version_id": job.source_version_id, "engine": job.engine, "state": job.state,
        "stage": job.stage, "stages": list(STAGES),
        "units": {"total": units.total, "written": units.written, "checked": units.checked, "passed": units.passed},
        "warnings": job.warnings, "error": {"code": job.error_code, "message": job.error} if job.error_code else None,
        "created_at": iso(job.created_at), "started_at": iso(job.started_at), "finished_at": iso(job.finished_at),
    }


def jobs_json(session: Session, found: list[KnowledgeJob]) -> list[dict[str, Any]]:
    """Several jobs, their progress counted in one query."""
    counted = jobs.progress(session, [job.id for job in found])
    return [job_json(session, job, counted.get(job.id, jobs.Progress())) for job in found]  # type: ignore[misc]


def versions_json(session: Session, versions: list[KnowledgeSourceVersion]) -> list[dict[str, Any]]:
    """Source versions with their source note and latest job, in a fixed number of queries."""
    ids = [v.id for v in versions]
    notes = dict(session.execute(select(KnowledgeSourceNote.source_version_id, KnowledgeSourceNote.active_version_id)
                                 .where(KnowledgeSourceNote.source_version_id.in_(ids))).all())
    latest = jobs.latest_of_each(session, ids)
    counted = jobs.progress(session, [job.id for job in latest.values()])
    return [{
        "id": v.id, "number": v.number, "label": v.label, "content_hash": v.content_hash,
        "page_count": v.page_count, "origin": v.origin, "created_at": iso(v.created_at),
        "source_note_version_id": notes.get(v.id),
        "job": job_json(session, job, counted.get(job.id, jobs.Progress())) if (job := latest.get(v.id)) else None,
    } for v in versions]


def source_json(session: Session, source: KnowledgeSource, *, with_versions: bool = False) -> dict[str, Any]:
    return sources_json(session, [source], with_versions=with_versions)[0]


def sources_json(session: Session, listed: list[KnowledgeSource], *, with_versions: bool = False) -> list[dict[str, Any]]:
    """Sources with their active version (and every version, ``with_versions``), in a fixed
    number of queries however many sources there are: the panel polls this list while a job runs."""
    versions: dict[str, list[KnowledgeSourceVersion]] = {s.id: [] for s in listed}
    for version in sources.versions_of_each(session, list(versions)):
        versions[version.source_id].append(version)
    wanted = [v for s in listed for v in versions[s.id] if with_versions or v.id == s.active_version_id]
    shown = {v["id"]: v for v in versions_json(session, wanted)}
    items = []
    for source in listed:
        item = {
            "id": source.id, "resource_id": source.resource_id, "label": source.label, "state": source.state,
            "created_at": iso(source.created_at), "deleted_at": iso(source.deleted_at),
            "active_version": shown.get(source.active_version_id or ""), "version_count": len(versions[source.id]),
        }
        if with_versions:
            item["versions"] = [shown[v.id] for v in versions[source.id]]
        items.append(item)
    return items


def source_note_json(session: Session, notebook_id: str, snapshot: KnowledgeSourceNoteVersion) -> dict[str, Any]:
    source_note = session.get(KnowledgeSourceNote, snapshot.source_note_id)
    version = session.get(KnowledgeSourceVersion, source_note.source_version_id)
    source = session.get(KnowledgeSource, version.source_id)
    return {
        "id": snapshot.id, "number": snapshot.number, "created_at": iso(snapshot.created_at),
        "current": source_note.active_version_id == snapshot.id,
        "source": {"id": source.id, "label": source.label, "state": source.state},
        "source_version": {"id": version.id, "number": version.number, "current": source.active_version_id == version.id},
        "toc": snapshot.toc,
        "markdown_url": f"/api/notebooks/{quote(notebook_id)}/knowledge/source-notes/{quote(snapshot.id)}/markdown",
    }


def note_json(session: Session, notebook_id: str, note: KnowledgeNote, version: KnowledgeNoteVersion) -> dict[str, Any]:
    source_version = session.get(KnowledgeSourceVersion, note.source_version_id)
    blocks = _document_blocks(session, note.source_version_id, [e["block_ordinal"] for e in version.evidence])
    return {
        "id": note.id, "state": note.state, "active_version_id": note.active_version_id,
        "version": {"id": version.id, "number": version.number, "author": version.author, "created_at": iso(version.created_at),
                    "current": note.active_version_id == version.id},
        "source_version_id": note.source_version_id, "title": version.title, "summary": version.summary,
        "blocks": version.blocks, "claims": version.claims, "images": version.images,
        "evidence": [evidence_json(notebook_id, source_version, e, blocks.get(e["block_ordinal"])) for e in version.evidence],
    }


def evidence_json(
    notebook_id: str, version: KnowledgeSourceVersion, evidence: dict[str, Any], block: KnowledgeBlock | None,
) -> dict[str, Any]:
    """A claim's evidence with where it is: the page (physical, and printed label), the block's box
    on it, the source version, and the notebook source and revision whose file the viewer opens
    (``file_url``: that file at the page)."""
    origin = version.origin
    return {**evidence, "box": block.box if block else None, "file_url": file_url(notebook_id, version, evidence["page"]),
            "locator": page_locator(evidence["page"], evidence["page_label"]), "source_version_id": version.id,
            "source_id": origin["source_id"], "revision_id": origin["revision_id"]}


def hit_json(hit: Hit) -> dict[str, Any]:
    return {"kind": hit.kind, "id": hit.id, "version_id": hit.version_id, "title": hit.title, "score": round(hit.score, 4),
            "pages": sorted({passage.page for passage in hit.passages})}


def answer_json(session: Session, notebook_id: str, composed: Composed, hits: list[Hit]) -> dict[str, Any]:
    """An answer with its citations, each opening the page it quotes, and the hits it read."""
    versions = {version.id: version for version in session.scalars(select(KnowledgeSourceVersion).where(
        KnowledgeSourceVersion.id.in_({c.passage.source_version_id for c in composed.citations})))}
    citations = []
    for citation in composed.citations:
        passage, version = citation.passage, versions[citation.passage.source_version_id]
        citations.append({
            "kind": citation.hit.kind, "id": citation.hit.id, "version_id": citation.hit.version_id,
            "source_version_id": passage.source_version_id, "block_ordinal": passage.block_ordinal,
            "quote": citation.quote, "locator": page_locator(passage.page, passage.page_label),
            "file_url": file_url(notebook_id, version, passage.page),
        })
    return {"status": composed.status, "answer": composed.text, "citations": citations, "hits": [hit_json(h) for h in hits]}


def file_url(notebook_id: str, version: KnowledgeSourceVersion, page: int) -> str:
    """The original file of ``version`` (as the revision it came from holds it), at ``page``."""
    origin = version.origin
    return (f"/api/notebooks/{quote(notebook_id)}/sources/{quote(origin['source_id'])}/file"
            f"?revision={quote(origin['revision_id'])}#page={page}")


def page_locator(page: int, label: str | None) -> dict[str, Any]:
    return {"page": page, **({"page_label": label} if label else {})}


def _document_blocks(session: Session, version_id: str, ordinals: list[int]) -> dict[int, KnowledgeBlock]:
    query = select(KnowledgeBlock).where(KnowledgeBlock.source_version_id == version_id, KnowledgeBlock.ordinal.in_(set(ordinals)))
    return {block.ordinal: block for block in session.scalars(query)}
