"""The sweeper's search for lost work reads unfinished rows through an index, never a whole table
of finished work (bench/sweep_scan.py: 28 ms against 1.5 ms with 100,000 finished jobs and as many
analyses)."""
from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.lost_work import lost_query
from storage.migrate import upgrade
from storage.models import Analysis, Job, KnowledgeEvent, KnowledgeJob, utcnow


@pytest.mark.parametrize("model", [Job, Analysis, KnowledgeJob, KnowledgeEvent])
def test_lost_work_is_found_without_scanning_the_table(tmp_path: Path, model: type) -> None:
    upgrade(tmp_path / "n.sqlite3")
    db = Database(tmp_path / "n.sqlite3")
    query = lost_query(model, queued_before=utcnow(), now=utcnow())
    compiled = query.compile(db.engine, compile_kwargs={"literal_binds": True})
    with db.reader() as session:
        plan = [row[-1] for row in session.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))]
    table = model.__tablename__
    assert plan and all(f"USING INDEX ix_{table}_state" in step or f"USING COVERING INDEX ix_{table}_state" in step
                        for step in plan if table in step), plan
