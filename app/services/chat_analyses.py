"""The chat's analysis tools: start, inspect and read a durable analysis of the page notebook,
through the same rules and views as the API (``analysis_access``, ``analysis_view``).

A refusal the API would answer (too many running, an unknown id, another member's in private
conversation mode) reaches the model as the tool's error, with the API's code, so it can tell the
person why. A result's points come with their chunks as evidence of this turn (as the turn's
pinned revision serves them, within its selected sources), so the model cites them as it cites a
search's, and the answer's citations resolve in the revision the turn pins.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.orm import Session

from app.errors import ApiError
from app.extensions import Services
from app.services import analysis_access
from app.services.analysis_view import cited_chunks
from app.services.chat_request import PinnedContext
from app.timestamps import iso
from pipeline.analysis.types import Focus
from pipeline.answering.tools import MAX_ANALYSES_LISTED
from pipeline.answering.types import EvidenceItem
from pipeline.types import PipelineError
from storage import analyses
from storage.evidence import EvidenceChunk
from storage.models import Analysis, Notebook
from storage.scope import Principal
from tasks.analysis import start_analysis

# Chunks shown per point: enough to cite it, bounded so a read stays a few pages of text.
MAX_POINT_EVIDENCE = 3

Item = Callable[[PinnedContext, EvidenceChunk, float], EvidenceItem]
Allowed = Callable[[PinnedContext, EvidenceChunk], bool]


@contextmanager
def as_tool_error() -> Iterator[None]:
    try:
        yield
    except ApiError as refused:
        raise PipelineError(refused.code, refused.message) from refused


class ChatAnalyses:
    def __init__(self, svc: Services, principal: Principal, contexts: list[PinnedContext], item: Item, allowed: Allowed) -> None:
        self.svc = svc
        self.principal = principal
        self.page = contexts[0]
        self.item = item
        self.allowed = allowed

    def start(self, kind: str, instruction: str) -> dict[str, Any]:
        with as_tool_error(), self.svc.db.session() as session:
            notebook = self._notebook(session)
            analysis = analysis_access.begin(self.svc, session, self.principal, notebook, Focus(kind, instruction),
                                             sorted(self.page.source_ids or ()))
            shown = _brief(session, analysis)
        start_analysis(analysis.id)
        return shown

    def inspect(self) -> list[dict[str, Any]]:
        with self.svc.db.reader() as session:
            notebook = self._notebook(session)
            mine = analysis_access.only_own(session, self.principal, notebook)
            listed = analyses.of_notebook(session, notebook, limit=MAX_ANALYSES_LISTED, by=mine)
            return [_brief(session, analysis) for analysis in listed]

    def read(self, analysis_id: str) -> dict[str, Any]:
        with as_tool_error(), self.svc.db.reader() as session:
            notebook = self._notebook(session)
            analysis = analysis_access.visible(session, self.principal, notebook, analysis_id)
            shown: dict[str, Any] = _brief(session, analysis)
            if analysis.result is not None:
                shown["points"] = self._points(session, notebook, analysis)
            return shown

    def _notebook(self, session: Session) -> Notebook:
        return session.get(Notebook, self.page.notebook.id)

    def _points(self, session: Session, notebook: Notebook, analysis: Analysis) -> list[dict[str, Any]]:
        """The points with the chunks they cite as this turn serves them (its pinned revision,
        its selected sources): a chunk a refresh changed since, or a source the turn leaves out,
        is not evidence of this turn."""
        points, found = cited_chunks(session, notebook, analysis, self.page.revision.id)
        shown = []
        for point in points:
            chunks = [found[chunk_id] for chunk_id in point.chunk_ids if chunk_id in found and self.allowed(self.page, found[chunk_id])]
            if chunks:  # a point resting only on changed, removed or unselected sources has nothing to cite
                shown.append({"text": point.text, "evidence": [self.item(self.page, chunk, 0.0) for chunk in chunks[:MAX_POINT_EVIDENCE]]})
        return shown


def _brief(session: Session, analysis: Analysis) -> dict[str, Any]:
    """What a model needs to know of an analysis: scalar fields only (``tools._bounded``)."""
    progress = analyses.progress(session, analysis)
    return {
        "analysis_id": analysis.id,
        "kind": analysis.kind,
        "instruction": analysis.instruction,
        "state": analysis.state,
        "levels_planned": len(progress),
        "steps_done": sum(level["done"] for level in progress),
        "steps_planned": sum(level["total"] for level in progress),
        "error": analysis.error,
        "created_at": iso(analysis.created_at),
    }
