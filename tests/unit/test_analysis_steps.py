"""An analysis run step by step over a stored notebook (SQuAD's Wikipedia articles, one resource
each), as its tasks will run it: every step's input within the batch bounds, a result that cites
many sources, a step run twice kept once, a run cut short resumed without running a finished step
again, and only the chosen sources read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from pipeline.analysis.batches import BatchBounds
from pipeline.analysis.offline import OfflineEngine
from pipeline.analysis.types import Focus
from pipeline.embedder import HashingEmbedder
from storage import analyses, revisions
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Analysis, AnalysisPart, Chunk, Notebook, Source
from support.analysis_runs import run_analysis, run_step
from support.services import CORPUS
from support.stored_notebooks import stored_notebook

BOUNDS = BatchBounds(max_items=24, max_chars=16_000)


def _articles(count: int, paragraphs: int = 15) -> dict[str, list[revisions.ChunkRow]]:
    """The first ``count`` articles, each its first ``paragraphs`` paragraphs as chunks."""
    rows: dict[str, list[revisions.ChunkRow]] = {}
    for line in (CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl").open(encoding="utf-8"):
        document = json.loads(line)
        if document["title"] not in rows and len(rows) == count:
            break
        chunks = rows.setdefault(document["title"], [])
        if len(chunks) < paragraphs:
            vector = HashingEmbedder().embed([document["text"]])[0].tobytes()
            chunks.append(revisions.ChunkRow(document["_id"], len(chunks), document["text"], {"offset": 0}, vector))
    return rows


ARTICLES = _articles(12)


@pytest.fixture
def notebook_id(tmp_path: Path) -> tuple[Database, str]:
    path = tmp_path / "notebooks.sqlite3"
    upgrade(path)
    db = Database(path)
    return db, stored_notebook(db, "alice", tuple(ARTICLES), ARTICLES)


def _start(db: Database, notebook_id: str, source_ids: list[str] | None = None) -> str:
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        return analyses.start(session, notebook, requested_by=None, focus=Focus(), source_ids=source_ids or [], engine="extractive").id


def _run(db: Database, notebook_id: str, analysis_id: str, *, stop_after: int | None = None) -> int:
    return run_analysis(db, notebook_id, analysis_id, BOUNDS, stop_after=stop_after)


def test_an_analysis_of_a_whole_notebook_stays_within_its_bounds_and_cites_many_sources(notebook_id) -> None:  # type: ignore[no-untyped-def]
    db, notebook = notebook_id
    analysis_id = _start(db, notebook)
    steps = _run(db, notebook, analysis_id)
    with db.reader() as session:
        analysis = session.get(Analysis, analysis_id)
        parts = session.query(AnalysisPart).filter_by(analysis_id=analysis_id).all()
        assert analysis.state == "succeeded" and len(analysis.levels) >= 2 and analysis.levels[-1] == 1
        assert steps == len(parts) == sum(analysis.levels)
        assert all(p.input_items <= BOUNDS.max_items and p.input_chars <= BOUNDS.max_chars for p in parts)
        cited = {point["resource_id"] for point in analysis.result["points"]}
        assert len(analysis.result["points"]) == 12 and len(cited) >= 8, cited
        texts = {chunk_id: text for chunk_id, text in session.execute(select(Chunk.chunk_id, Chunk.text))}
        assert all(point["text"] in texts[point["chunk_ids"][0]] for point in analysis.result["points"])


def test_a_run_cut_short_resumes_without_running_a_finished_step_again(notebook_id) -> None:  # type: ignore[no-untyped-def]
    db, notebook = notebook_id
    whole = _run(db, notebook, _start(db, notebook))
    analysis_id = _start(db, notebook)
    first = _run(db, notebook, analysis_id, stop_after=3)
    rest = _run(db, notebook, analysis_id)
    assert first == 3 and first + rest == whole
    with db.session() as session:
        notebook_row, analysis = session.get(Notebook, notebook), session.get(Analysis, analysis_id)
        assert not run_step(session, notebook_row, analysis, 0, 0, BOUNDS, OfflineEngine()), "a resent step runs once"


def test_only_the_chosen_sources_are_read(notebook_id) -> None:  # type: ignore[no-untyped-def]
    db, notebook = notebook_id
    with db.reader() as session:
        chosen = [source.id for source in session.query(Source).filter(Source.resource_id.in_(list(ARTICLES)[:2]))]
    analysis_id = _start(db, notebook, chosen)
    _run(db, notebook, analysis_id)
    with db.reader() as session:
        analysis = session.get(Analysis, analysis_id)
        assert {point["resource_id"] for point in analysis.result["points"]} <= set(list(ARTICLES)[:2])
