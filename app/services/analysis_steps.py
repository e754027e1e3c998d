"""The steps of one durable analysis, as its tasks run them (the tasks only wire these to Celery).

``next_steps`` plans what is due and says which steps are left: the map level from the pinned
revision's chunks (the notebook's current members, the chosen sources), then each reduce level
from the summaries below it, until one summary remains and is the result. A step reads what its
plan says (``step_inputs``), the engine writes its points outside any transaction
(``summarise``), and ``store_step`` keeps them unless another run of the step stored first.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from pipeline.analysis.batches import BatchBounds, batches
from pipeline.analysis.offline import MAP_POINTS, REDUCE_POINTS, ordered
from pipeline.analysis.types import AnalysisEngine, Focus, Passage, Point, Summary
from storage import analyses, evidence
from storage.analyses import PlannedPart
from storage.models import Analysis, AnalysisPart, Notebook

def points_per_step(bounds: BatchBounds) -> tuple[int, int]:
    """A reduce batch must hold two summaries, or a level would not shrink."""
    most = max(1, bounds.max_items // 2)
    return min(MAP_POINTS, most), min(REDUCE_POINTS, most)


@dataclass(frozen=True)
class Due:
    """The steps left at the current level, and whether this call planned that level (its steps
    were never sent: the caller sends them; otherwise they are in flight already)."""

    steps: list[tuple[int, int]]
    planned_now: bool


def next_steps(session: Session, notebook: Notebook, analysis: Analysis, bounds: BatchBounds) -> Due:
    """The (level, ordinal) steps left at the current level, planning the next level when the
    current one is done and finishing the analysis when one summary remains."""
    if not analysis.levels:
        return Due(_plan_map(session, notebook, analysis, bounds), True)
    level = len(analysis.levels) - 1
    current = analyses.parts(session, analysis.id, level)
    left = [(level, part.ordinal) for part in current if part.points is None]
    if left:
        return Due(left, False)
    if len(current) == 1:
        analyses.finish(analysis, ordered(Summary(analyses.points_of(current[0]), ()), analyses.focus_of(analysis)))
        return Due([], False)
    grouped = batches(current, _chars, bounds, count=lambda part: len(part.points or []))
    if len(grouped) >= len(current):  # the bounds hold one summary per batch: it would never end
        analyses.fail(analysis, "ANALYSIS_BATCH_TOO_SMALL",
                      "A batch holds only one summary (raise GNOSI_ANALYSIS_BATCH_CHUNKS or GNOSI_ANALYSIS_BATCH_CHARS).")
        return Due([], False)
    planned = [PlannedPart([part.ordinal for part in group], sum(len(p.points or []) for p in group), sum(map(_chars, group)))
               for group in grouped]
    analyses.plan_level(session, analysis, level + 1, planned)
    return Due([(level + 1, ordinal) for ordinal in range(len(planned))], True)


@dataclass(frozen=True)
class StepInputs:
    """What one step reads: a map step's passages or a reduce step's summaries, and the name of
    the engine that writes it (the analysis's own)."""

    level: int
    focus: Focus
    passages: list[Passage]
    summaries: list[Summary]
    engine: str


def step_inputs(session: Session, notebook: Notebook, analysis: Analysis, level: int, ordinal: int) -> StepInputs | None:
    """What a planned step reads, as its plan says; None when it ran already (a resent message)."""
    step = analyses.part(session, analysis.id, level, ordinal)
    if step is None or step.points is not None:
        return None
    if level == 0:
        return StepInputs(level, analyses.focus_of(analysis), _passages(session, notebook, analysis, list(step.reads)), [], analysis.engine)
    below = [part for part in analyses.parts(session, analysis.id, level - 1) if part.ordinal in set(step.reads)]
    summaries = [Summary(analyses.points_of(part), ()) for part in below]
    return StepInputs(level, analyses.focus_of(analysis), [], summaries, analysis.engine)


def summarise(inputs: StepInputs, bounds: BatchBounds, engine: AnalysisEngine) -> list[Point]:
    """The engine's work, which needs no database (the tasks run it outside any transaction)."""
    map_points, reduce_points = points_per_step(bounds)
    if inputs.level == 0:
        return engine.map(inputs.passages, inputs.focus, map_points)
    return engine.reduce(inputs.summaries, inputs.focus, reduce_points)


def store_step(session: Session, analysis: Analysis, level: int, ordinal: int, points: list[Point]) -> bool:
    """Keep a step's points unless another run of it kept its own first; progress restarts the
    count of the analysis's recoveries (tasks.sweeper)."""
    step = analyses.part(session, analysis.id, level, ordinal)
    if step is None or not analyses.complete(step, points):
        return False
    analysis.attempts = 0
    return True


def _plan_map(session: Session, notebook: Notebook, analysis: Analysis, bounds: BatchBounds) -> list[tuple[int, int]]:
    sizes = evidence.revision_chunk_sizes(session, notebook, analysis.revision_id, source_ids=analysis.source_ids)
    if not sizes:
        analyses.fail(analysis, "ANALYSIS_NO_EVIDENCE", "The chosen sources hold no text to analyse in this revision.")
        return []
    planned = [PlannedPart([chunk_id for chunk_id, _ in batch], len(batch), sum(size for _, size in batch))
               for batch in batches(sizes, lambda sized: sized[1], bounds)]
    analyses.plan_level(session, analysis, 0, planned)
    return [(0, ordinal) for ordinal in range(len(planned))]


def _passages(session: Session, notebook: Notebook, analysis: Analysis, chunk_ids: list[str]) -> list[Passage]:
    rows = evidence.revision_chunks(session, notebook, analysis.revision_id, source_ids=analysis.source_ids, chunk_ids=chunk_ids)
    return [Passage(chunk.chunk_id, chunk.resource_id, chunk.text, ordinal, chunk.locator, chunk.source_title or "")
            for chunk, ordinal in rows]


def _chars(part: AnalysisPart) -> int:
    return sum(len(point["text"]) for point in part.points or [])
