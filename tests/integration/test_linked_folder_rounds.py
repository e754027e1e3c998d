"""Linked folders in the distributed layout, for real: Redis, a coordinator worker process with
Celery beat, a database-free extract worker. A linked folder is ingested; beat's scheduled round
and a "sync now" that start together on the same folder make no duplicate; an emptied folder
loses its documents at the next scheduled round."""
from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from support.live import Deployment, deployment
from support.services import CORPUS
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def documents(d: Deployment, notebook_id: str) -> list[dict[str, Any]]:
    return d.api.get(f"/api/knowledge-base/{notebook_id}/documents").json()["data"]["items"]


def settled(d: Deployment, notebook_id: str, names: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = documents(d, notebook_id)
        if sorted(i["name"] for i in items) == sorted(names) and all(i["status"] == "AVAILABLE" for i in items):
            return items
        time.sleep(0.3)
    raise AssertionError(f"documents did not settle as {names}: {documents(d, notebook_id)}")


def test_a_scheduled_round_and_sync_now_meet_on_a_folder_without_duplicates(tmp_path: Path) -> None:
    team = tmp_path / "drives" / "team"
    team.mkdir(parents=True)
    shutil.copy(CORPUS / "pdf" / "tracemonkey.pdf", team / "tracemonkey.pdf")
    with ExitStack() as stack:
        vault = VaultBuilder(tmp_path / "vault")
        ids = [vault.pdf_record("dmca", "dmca.pdf")]
        d = stack.enter_context(deployment(
            tmp_path, vault.root, vault.table_id,
            GNOSI_SYNC_FOLDER_ROOTS=str(team.parent), GNOSI_SYNC_ROUND_SECONDS="1",
        ))
        d.start_web()
        d.start_worker("coordinator", "coordinator", beat=True)
        d.start_stateless_extractor("extract")
        notebook_id = d.api.create(ids)
        d.api.wait_for_job(notebook_id)
        linked = d.api.post(
            f"/api/notebooks/{notebook_id}/linked-folders", {"connector": "folder", "folder": str(team), "schedule": 3600}
        )
        assert linked.status_code == 201, linked.text
        settled(d, notebook_id, ["tracemonkey.pdf"])

        shutil.copy(CORPUS / "pdf" / "naacl06-shinyama.pdf", team / "paraphrase.pdf")
        with sqlite3.connect(d.database, timeout=30) as db:  # the schedule falls due now
            db.execute("UPDATE linked_folders SET next_sync_at = datetime('now', '-1 second')")
        answer = d.api.post("/api/knowledge-base/sync", {"source": "folder"}).json()
        assert answer["code"] == 0 and answer["data"]["accepted"] is True
        settled(d, notebook_id, ["paraphrase.pdf", "tracemonkey.pdf"])
        deadline = time.monotonic() + 30
        while d.query("SELECT count(*) FROM sync_runs WHERE trigger = 'scheduled'")[0][0] == 0:
            assert time.monotonic() < deadline, "beat started no scheduled round"
            time.sleep(0.2)
        assert d.query("SELECT file_id, count(*) FROM linked_documents GROUP BY file_id HAVING count(*) > 1") == []
        assert d.query("SELECT count(*) FROM notebook_resources WHERE resource_id LIKE 'linked:%'")[0][0] == 2
        hits = d.api.get(f"/api/notebooks/{notebook_id}/search", q="paraphrase acquisition named entities").json()
        assert hits["results"][0]["resource_id"].startswith("linked:")

        for path in team.iterdir():
            path.unlink()
        with sqlite3.connect(d.database, timeout=30) as db:  # the next scheduled round empties it
            db.execute("UPDATE linked_folders SET next_sync_at = datetime('now', '-1 second')")
        deadline = time.monotonic() + 60
        while documents(d, notebook_id):
            assert time.monotonic() < deadline, "the emptied folder kept its documents"
            time.sleep(0.3)
        d.api.wait_for_job(notebook_id)
        results = d.api.get(f"/api/notebooks/{notebook_id}/search", q="paraphrase acquisition").json()["results"]
        assert not any(r["resource_id"].startswith("linked:") for r in results)
