"""Durable analyses in notebooks.sqlite3: pinned to the active revision, parts stored once (a step
run again finds its work done), scoped to their notebook, kept revisions, cascading deletion."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from pipeline.analysis.types import Focus, Point
from storage import analyses, retention
from storage.analyses import PlannedPart
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Analysis, AnalysisPart, Notebook, Revision, utcnow
from support.stored_notebooks import refresh, stored_notebook
from unit.test_source_versions import DOCUMENTS, KEEP_NOTHING_OLD

POINT = Point("The Act prohibits circumvention.", ("c1",), "dmca.pdf", 1.5, (0, 10))


@pytest.fixture
def db(tmp_path: Path) -> Database:
    path = tmp_path / "notebooks.sqlite3"
    upgrade(path)
    return Database(path)


def _start(db: Database, notebook_id: str) -> str:
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        analysis = analyses.start(session, notebook, requested_by=None, focus=Focus("timeline", "dates"), source_ids=[],
                                  engine="extractive")
        return analysis.id


def test_an_analysis_is_pinned_to_the_active_revision_and_its_parts_are_stored_once(db: Database) -> None:
    notebook_id = stored_notebook(db, "alice", DOCUMENTS[:2])
    analysis_id = _start(db, notebook_id)
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        analysis = analyses.get(session, notebook, analysis_id)
        assert analysis is not None and analysis.revision_id == notebook.active_revision_id
        assert analyses.focus_of(analysis) == Focus("timeline", "dates") and analysis.state == "queued"
        planned = [PlannedPart(["c1", "c2"], 2, 900), PlannedPart(["c3"], 1, 450)]
        assert analyses.plan_level(session, analysis, 0, planned)
        assert not analyses.plan_level(session, analysis, 0, planned), "a level is planned once"
        first = analyses.part(session, analysis_id, 0, 0)
        assert first.reads == ["c1", "c2"] and first.points is None
        assert analyses.complete(first, [POINT]) and not analyses.complete(first, []), "a step run again keeps the first result"
        assert [analyses.points_of(p) for p in analyses.parts(session, analysis_id, 0)] == [[POINT], []]
        assert analyses.progress(session, analysis) == [{"level": 0, "done": 1, "total": 2}]


def test_an_analysis_is_found_only_through_its_own_notebook(db: Database) -> None:
    mine, theirs = stored_notebook(db, "alice", DOCUMENTS[:1]), stored_notebook(db, "bob", DOCUMENTS[1:2])
    analysis_id = _start(db, mine)
    with db.reader() as session:
        assert analyses.get(session, session.get(Notebook, theirs), analysis_id) is None
        assert [a.id for a in analyses.of_notebook(session, session.get(Notebook, mine), limit=10)] == [analysis_id]


def test_retention_keeps_the_revision_an_analysis_reads(db: Database) -> None:
    notebook_id = stored_notebook(db, "alice", DOCUMENTS)
    analysis_id = _start(db, notebook_id)
    with db.reader() as session:
        pinned = session.get(Analysis, analysis_id).revision_id
    refresh(db, notebook_id, {DOCUMENTS[0]: DOCUMENTS[1]}, keep=KEEP_NOTHING_OLD)
    refresh(db, notebook_id, {DOCUMENTS[0]: DOCUMENTS[2]}, keep=KEEP_NOTHING_OLD)
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook.active_revision_id != pinned
        kept = session.get(Revision, pinned)
        assert kept is not None and kept.state == "complete", "the analysed revision was deleted"
        session.delete(session.get(Analysis, analysis_id))
        session.flush()
        retention.apply(session, notebook, completed_keep=1, audit_keep=0)
        # Gone, or retired: only the source versions the active revision still serves are left of it.
        left = session.get(Revision, pinned)
        assert left is None or left.state == "retired", "an analysis that is gone pins nothing"


def test_deleting_a_notebook_deletes_its_analyses_and_their_parts(db: Database) -> None:
    notebook_id = stored_notebook(db, "alice", DOCUMENTS[:1])
    analysis_id = _start(db, notebook_id)
    with db.session() as session:
        analysis = session.get(Analysis, analysis_id)
        analyses.plan_level(session, analysis, 0, [PlannedPart(["c1"], 1, 10)])
    with db.session() as session:
        session.delete(session.get(Notebook, notebook_id))
    with db.reader() as session:
        assert session.scalars(select(Analysis)).all() == [] and session.scalars(select(AnalysisPart)).all() == []


def test_cancel_stops_a_queued_analysis_now_and_a_running_one_at_its_next_step(db: Database) -> None:
    notebook_id = stored_notebook(db, "alice", DOCUMENTS[:1])
    queued, running = _start(db, notebook_id), _start(db, notebook_id)
    with db.session() as session:
        session.get(Analysis, running).state = "running"
        assert analyses.request_cancel(session.get(Analysis, queued)) == "cancelled"
        assert analyses.request_cancel(session.get(Analysis, running)) == "cancelling"


def test_the_sweeper_resends_a_lost_analysis_cancels_a_cancelling_one_and_gives_up_on_one_that_kills_workers(db: Database) -> None:
    from tasks.sweeper import _recover

    notebook_id = stored_notebook(db, "alice", DOCUMENTS[:1])
    lost, stopping, doomed = _start(db, notebook_id), _start(db, notebook_id), _start(db, notebook_id)
    expired = utcnow() - timedelta(seconds=1)
    with db.session() as session:
        for analysis_id, state, attempts in ((lost, "running", 0), (stopping, "cancelling", 0), (doomed, "running", 5)):
            analysis = session.get(Analysis, analysis_id)
            analysis.state, analysis.lease_expires_at, analysis.attempts = state, expired, attempts
    with db.session() as session:
        found = analyses.recoverable(session, queued_before=utcnow() - timedelta(minutes=5))
        assert _recover(found, analyses.cancelled, analyses.fail, 5, timedelta(minutes=5)) == [lost]
    with db.reader() as session:
        states = {a.id: (a.state, a.error_code) for a in session.scalars(select(Analysis))}
    assert states == {lost: ("running", None), stopping: ("cancelled", None), doomed: ("failed", "ATTEMPTS_EXHAUSTED")}
