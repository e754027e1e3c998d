"""Durable analyses: one is started pinned to its notebook's active revision; each level's steps are
planned (stored with what they read) before any runs and filled in as they finish (a step run again
after a worker died finds its work done); retention keeps every revision an analysis reads.

Planning a level is a compare-and-set on the analysis's list of levels, inside the caller's write
transaction: of two workers finishing a level's last steps at once, one plans the next level."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pipeline.analysis.types import Focus, Point
from storage.lost_work import cancelled, lost, request_cancel  # noqa: F401 (the cancels are this module's API too)
from storage.lost_work import failed as fail  # noqa: F401 (as are the failure)
from storage.models import Analysis, AnalysisPart, Notebook, in_notebook, utcnow

ACTIVE_STATES = ("queued", "running", "cancelling")


def start(
    session: Session, notebook: Notebook, *, requested_by: str | None, focus: Focus, source_ids: list[str], engine: str
) -> Analysis:
    """A queued analysis of ``notebook``'s active revision (the caller checked there is one)."""
    if notebook.active_revision_id is None:
        raise ValueError(f"notebook {notebook.id} has no active revision to analyse")
    analysis = Analysis(
        vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
        revision_id=notebook.active_revision_id, requested_by=requested_by, kind=focus.kind,
        instruction=focus.instruction, source_ids=list(source_ids), engine=engine, state="queued", levels=[],
    )
    session.add(analysis)
    session.flush()
    return analysis


def get(session: Session, notebook: Notebook, analysis_id: str) -> Analysis | None:
    """The analysis if it belongs to ``notebook`` (an id of another notebook or workspace is none)."""
    return session.scalar(select(Analysis).where(in_notebook(Analysis, notebook), Analysis.id == analysis_id))


def of_notebook(session: Session, notebook: Notebook, *, limit: int, offset: int = 0, by: str | None = None) -> list[Analysis]:
    """The notebook's analyses (those ``by`` started, when given), newest first."""
    query = select(Analysis).where(*_scope(notebook, by)).order_by(Analysis.created_at.desc(), Analysis.id)
    return list(session.scalars(query.limit(limit).offset(offset)))


def _scope(notebook: Notebook, by: str | None) -> list[Any]:
    return [in_notebook(Analysis, notebook), *([Analysis.requested_by == by] if by is not None else [])]


def count(session: Session, notebook: Notebook, *, by: str | None = None) -> int:
    return session.scalar(select(func.count()).select_from(Analysis).where(*_scope(notebook, by))) or 0


def active_count(session: Session, notebook: Notebook) -> int:
    query = select(func.count()).select_from(Analysis).where(in_notebook(Analysis, notebook), Analysis.state.in_(ACTIVE_STATES))
    return session.scalar(query) or 0


def focus_of(analysis: Analysis) -> Focus:
    return Focus(analysis.kind, analysis.instruction)


@dataclass(frozen=True)
class PlannedPart:
    """One step of a level before it runs: what it reads and how much that is."""

    reads: list[Any]
    input_items: int
    input_chars: int


def plan_level(session: Session, analysis: Analysis, level: int, planned: list[PlannedPart]) -> bool:
    """Store a level's steps, unless another worker planned it first (False then)."""
    if len(analysis.levels) != level:
        return False
    for ordinal, step in enumerate(planned):
        session.add(AnalysisPart(
            analysis_id=analysis.id, level=level, ordinal=ordinal, reads=list(step.reads),
            input_items=step.input_items, input_chars=step.input_chars, points=None,
        ))
    analysis.levels = [*analysis.levels, len(planned)]
    return True


def part(session: Session, analysis_id: str, level: int, ordinal: int) -> AnalysisPart | None:
    return session.scalar(
        select(AnalysisPart).where(
            AnalysisPart.analysis_id == analysis_id, AnalysisPart.level == level, AnalysisPart.ordinal == ordinal
        )
    )


def parts(session: Session, analysis_id: str, level: int) -> list[AnalysisPart]:
    """One level's parts, by ordinal."""
    query = select(AnalysisPart).where(AnalysisPart.analysis_id == analysis_id, AnalysisPart.level == level)
    return list(session.scalars(query.order_by(AnalysisPart.ordinal)))


def complete(stored: AnalysisPart, points: list[Point]) -> bool:
    """Fill in a step's result, unless it was filled in already (a step run twice keeps the first)."""
    if stored.points is not None:
        return False
    stored.points = [point.to_dict() for point in points]
    return True


def points_of(stored: AnalysisPart) -> list[Point]:
    return [Point.from_dict(point) for point in stored.points or []]


def progress(session: Session, analysis: Analysis) -> list[dict[str, int]]:
    """Steps done of each planned level, map first."""
    done = dict(session.execute(
        select(AnalysisPart.level, func.count()).where(AnalysisPart.analysis_id == analysis.id, AnalysisPart.points.is_not(None))
        .group_by(AnalysisPart.level)
    ).all())
    return [{"level": level, "done": done.get(level, 0), "total": total} for level, total in enumerate(analysis.levels)]


def finish(analysis: Analysis, points: list[Point]) -> None:
    analysis.state = "succeeded"
    analysis.result = {"points": [point.to_dict() for point in points]}
    analysis.finished_at = utcnow()



def pinned_revisions(session: Session, notebook: Notebook) -> set[str]:
    """Revisions of ``notebook`` that an analysis reads or whose result cites them: kept while the
    analysis exists (a failed or cancelled one cites nothing)."""
    query = select(Analysis.revision_id).where(
        in_notebook(Analysis, notebook), Analysis.state.in_((*ACTIVE_STATES, "succeeded"))
    )
    return set(session.scalars(query))


def recoverable(session: Session, *, queued_before: datetime) -> list[Analysis]:
    """Analyses whose messages may be lost: queued for a while, or holding an expired lease."""
    return lost(session, Analysis, queued_before=queued_before)
