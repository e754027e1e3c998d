"""An analysis as readers see it, through the API and the chat's tools alike.

Its result's points cite their chunks in the pinned revision exactly as chat citations do (title,
locator, ``open_url``, ``cite``, and the quoted passage), so the dashboard opens both the same way.
A point based on a resource that left the notebook stays readable, marked ``removed``, and loses
that resource's citations: its evidence is gone from the notebook at once, as everywhere else.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.citation_urls import passage_link
from app.extensions import Services
from app.services.titles import chunk_title, record_titles
from app.timestamps import iso
from pipeline.analysis.types import Point
from storage import analyses, evidence
from storage.evidence import EvidenceChunk
from storage.models import Analysis, Notebook


def analysis_json(
    svc: Services, session: Session, notebook: Notebook, analysis: Analysis, *, can_manage: bool, with_result: bool = True
) -> dict[str, Any]:
    """``can_manage``: whether the reader may cancel or delete it (``analysis_access.may_manage``)."""
    shown: dict[str, Any] = {
        "id": analysis.id,
        "notebook_id": notebook.id,
        "revision_id": analysis.revision_id,
        "kind": analysis.kind,
        "instruction": analysis.instruction,
        "source_ids": analysis.source_ids,
        "engine": analysis.engine,
        "state": analysis.state,
        "progress": analyses.progress(session, analysis),
        "error": {"code": analysis.error_code, "message": analysis.error} if analysis.error_code else None,
        "requested_by": analysis.requested_by,
        "created_at": iso(analysis.created_at),
        "finished_at": iso(analysis.finished_at),
        "can_manage": can_manage,
    }
    if with_result:
        shown["result"] = None if analysis.result is None else {"points": result_points(svc, session, notebook, analysis)}
    return shown


def result_points(svc: Services, session: Session, notebook: Notebook, analysis: Analysis) -> list[dict[str, Any]]:
    points, found = cited_chunks(session, notebook, analysis, analysis.revision_id)
    titles = record_titles(svc, notebook.table_id) if found else {}
    shown = []
    for point in points:
        citations = [
            {**passage_link(notebook.id, found[chunk_id], chunk_title(titles, found[chunk_id])), "quote": point.quote_of(position)}
            for position, chunk_id in enumerate(point.chunk_ids)
            if chunk_id in found
        ]
        removed = len(citations) < len(point.chunk_ids)
        shown.append({"text": point.text, "resource_id": point.resource_id, "removed": removed, "citations": citations})
    return shown


def cited_chunks(session: Session, notebook: Notebook, analysis: Analysis, revision_id: str) -> tuple[list[Point], dict[str, EvidenceChunk]]:
    """A result's points and the chunks they cite that ``revision_id`` serves of the notebook's
    current members (the pinned revision for the API; a chat turn's own for its tools)."""
    points = [Point.from_dict(point) for point in (analysis.result or {}).get("points", [])]
    wanted = list(dict.fromkeys(chunk_id for point in points for chunk_id in point.chunk_ids))
    rows = evidence.revision_chunks(session, notebook, revision_id, chunk_ids=wanted) if wanted else []
    return points, {chunk.chunk_id: chunk for chunk, _ in rows}
