"""Run an analysis to its end in this process, step by step, as its tasks would (for tests that
need a finished analysis without a worker)."""
from __future__ import annotations

from sqlalchemy.orm import Session

from app.services.analysis_steps import next_steps, step_inputs, store_step, summarise
from pipeline.analysis.batches import BatchBounds
from pipeline.analysis.offline import OfflineEngine
from pipeline.analysis.types import AnalysisEngine
from storage.db import Database
from storage.models import Analysis, Notebook


def run_analysis(db: Database, notebook_id: str, analysis_id: str, bounds: BatchBounds, *, stop_after: int | None = None) -> int:
    """Run the analysis to its end (or for ``stop_after`` steps, as a killed worker would); the
    number of steps that did work."""
    ran = 0
    while True:
        with db.session() as session:
            notebook, analysis = session.get(Notebook, notebook_id), session.get(Analysis, analysis_id)
            analysis.state = "running" if analysis.state == "queued" else analysis.state
            due = next_steps(session, notebook, analysis, bounds).steps
        if not due:
            return ran
        for level, ordinal in due:
            if stop_after is not None and ran == stop_after:
                return ran
            with db.session() as session:
                notebook, analysis = session.get(Notebook, notebook_id), session.get(Analysis, analysis_id)
                ran += run_step(session, notebook, analysis, level, ordinal, bounds, OfflineEngine())


def run_step(
    session: Session, notebook: Notebook, analysis: Analysis, level: int, ordinal: int, bounds: BatchBounds, engine: AnalysisEngine
) -> bool:
    """One planned step in one transaction (the tasks use two, the engine between them); False
    when it had run already."""
    inputs = step_inputs(session, notebook, analysis, level, ordinal)
    return inputs is not None and store_step(session, analysis, level, ordinal, summarise(inputs, bounds, engine))
