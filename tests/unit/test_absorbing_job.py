"""A request that a queued job absorbs unchanged needs no write (app.services.ingest); any request
that would change the job, or meets a running one, goes through ``request_ingest`` under the lock."""
from __future__ import annotations

from pathlib import Path

import pytest

from storage import jobs
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Job, Notebook
from support.notebook_rows import private_notebook

VAULT = "v" * 32


@pytest.fixture()
def db(tmp_path: Path) -> Database:
    upgrade(tmp_path / "n.sqlite3")
    return Database(tmp_path / "n.sqlite3")


def _notebook_with_job(db: Database, state: str, params: dict) -> str:
    with db.session() as session:
        notebook = private_notebook(session, VAULT)
        session.add(Job(id="job", vault_hash=VAULT, workspace_id="w", notebook_id=notebook.id, kind=jobs.INGEST,
                        state=state, params=params))
        return notebook.id


@pytest.mark.parametrize(("asked", "absorbed"), [
    ({}, True),
    ({"force_resource_ids": ["r1"]}, True),
    ({"force_resource_ids": ["r2"]}, False),  # the job would have to extract r2 again as well
    ({"force_resource_ids": ["r1", "r2"]}, False),
])
def test_a_queued_job_absorbs_only_what_it_already_asks(db: Database, asked: dict, absorbed: bool) -> None:
    notebook_id = _notebook_with_job(db, "queued", {"force_resource_ids": ["r1"]})
    with db.reader() as session:
        job = jobs.absorbing_job(session, session.get(Notebook, notebook_id), asked)

    assert (job is not None and job.id == "job") is absorbed
    with db.session() as session:
        request = jobs.request_ingest(session, session.get(Notebook, notebook_id), requested_by=None, params=asked)
        changed = request.job.params != {"force_resource_ids": ["r1"]}
    assert request.outcome == "coalesced" and changed is not absorbed, "absorbing_job must agree with request_ingest"


def test_a_running_job_absorbs_nothing(db: Database) -> None:
    """It planned its sources already: a request must mark it for a rerun, which is a write."""
    notebook_id = _notebook_with_job(db, "running", {})
    with db.reader() as session:
        assert jobs.absorbing_job(session, session.get(Notebook, notebook_id), {}) is None
