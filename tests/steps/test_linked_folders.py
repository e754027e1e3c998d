"""Linked folders with the ``folder`` connector on real directories (docs/decisions/0020): the
real API over HTTP, the sync rounds and the five ingestion steps run by Celery's test worker
(conftest.py), real corpus PDFs. Every rule of the knowledge-base sync seed is exercised here or in
test_drive_sync.py (the same rules through the Google Drive connector)."""
from __future__ import annotations

import importlib
import os
import shutil
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select

from app.services.folder_sync import sync_folder
from storage import linked
from tasks.sync import scheduled_rounds
from storage.models import LinkedDocument, LinkedFolder, NotebookResource, SyncRun, utcnow
from support.services import CORPUS

if TYPE_CHECKING:
    from steps.conftest import Instance

PDF = CORPUS / "pdf"
AVAILABLE = "AVAILABLE"


@pytest.fixture
def drive(tmp_path: Path) -> Path:
    """The operator's allowed root, with a team folder holding two corpus PDFs."""
    team = tmp_path / "drives" / "team"
    team.mkdir(parents=True)
    shutil.copy(PDF / "tracemonkey.pdf", team / "tracemonkey.pdf")
    shutil.copy(PDF / "naacl06-shinyama.pdf", team / "paraphrase.pdf")
    return team


@pytest.fixture
def kb(launch: Callable[..., Instance], drive: Path) -> Instance:
    return launch(GNOSI_SYNC_FOLDER_ROOTS=str(drive.parent), GNOSI_SYNCS_PER_MINUTE="1000")


def counted(monkeypatch: pytest.MonkeyPatch, target: str) -> list[Any]:
    """Count the calls of the function (or method) at dotted ``target``; the original still runs."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:-1]:
            owner = getattr(owner, attribute)
        break
    real, calls = getattr(owner, parts[-1]), []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, parts[-1], wrapper)
    return calls


def link(instance: Instance, notebook_id: str, folder: Path, **extra: Any) -> dict[str, Any]:
    response = instance.call(
        "POST", f"/api/notebooks/{notebook_id}/linked-folders", json={"connector": "folder", "folder": str(folder), **extra}
    )
    assert response.status_code == 201, response.json
    return response.json


def documents(instance: Instance, notebook_id: str) -> list[dict[str, Any]]:
    response = instance.call("GET", f"/api/knowledge-base/{notebook_id}/documents")
    assert response.status_code == 200 and response.json["code"] == 0, response.json
    return response.json["data"]["items"]


def settled(instance: Instance, notebook_id: str, count: int) -> list[dict[str, Any]]:
    """The documents once ``count`` of them exist and none is still indexing."""
    def probe() -> list[dict[str, Any]] | None:
        items = documents(instance, notebook_id)
        done = len(items) == count and all(d["status"] != "INDEXING" for d in items)
        return items if done else None

    return instance.wait_for(probe, lambda: f"{count} settled documents, have {documents(instance, notebook_id)}")


def sync(instance: Instance, *ids: str, source: str = "folder", route: str = "/api/knowledge-base/sync") -> Any:
    body: dict[str, Any] = {"source": source}
    if ids:
        body["knowledge_base_ids"] = list(ids)
    return instance.call("POST", route, json=body)


def rounds_done(instance: Instance, count: int) -> None:
    def finished() -> bool:
        states = instance.read(lambda s: list(s.scalars(select(SyncRun.state))))
        return len(states) >= count and all(state != "running" for state in states)

    instance.wait_for(finished, f"{count} sync rounds to end")


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def test_a_linked_folder_becomes_searchable_citable_sources(kb: Instance, drive: Path) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    folder = link(kb, notebook_id, drive, schedule=3600)
    assert (folder["name"], folder["schedule"], folder["connector"]) == ("team", 3600, "folder")

    items = settled(kb, notebook_id, 2)
    assert {d["name"]: d["status"] for d in items} == {"paraphrase.pdf": AVAILABLE, "tracemonkey.pdf": AVAILABLE}
    listed = kb.call("GET", f"/api/notebooks/{notebook_id}/linked-folders").json["items"]
    assert listed[0]["document_count"] == 2 and listed[0]["last_sync_outcome"] == "ok"

    sources = kb.call("GET", f"/api/notebooks/{notebook_id}/sources").json["items"]
    titles = {s["resource_id"]: s["title"] for s in sources}
    assert sorted(t for r, t in titles.items() if r.startswith("linked:")) == ["paraphrase.pdf", "tracemonkey.pdf"]

    hits = kb.call("GET", f"/api/notebooks/{notebook_id}/search?q=trace+trees+JIT+compiler&limit=3").json["results"]
    top = hits[0]
    assert top["resource_id"] == by_name(items)["tracemonkey.pdf"]["resource_id"] and top["locator"]["page"] >= 1
    evidence = kb.call("GET", f"/api/notebooks/{notebook_id}/evidence/{top['chunk_id']}?revision={top['revision_id']}")
    assert evidence.status_code == 200, evidence.json
    pdf = kb.call("GET", f"/api/notebooks/{notebook_id}/sources/{top['source_id']}/file?revision={top['revision_id']}")
    assert pdf.status_code == 200 and pdf.data == (drive / "tracemonkey.pdf").read_bytes()

    removed = kb.call("DELETE", f"/api/notebooks/{notebook_id}/sources/{top['resource_id']}")
    assert removed.status_code == 409 and removed.json["code"] == "LINKED_DOCUMENT"


def test_unchanged_files_are_not_downloaded_changed_ones_are_and_gone_ones_leave(
    kb: Instance, drive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    link(kb, notebook_id, drive)
    before = by_name(settled(kb, notebook_id, 2))
    rounds_done(kb, 1)
    downloads = counted(monkeypatch, "pipeline.connectors.folder.FolderConnector.download")
    extractions = counted(monkeypatch, "pipeline.source_processing.extract_read")

    answer = sync(kb, notebook_id).json
    assert answer == {"code": 0, "message": "OK", "data": {
        "accepted": True, "source": "folder", "matched_knowledge_base_count": 1, "matched_doc_count": 2,
        "matched_folder_count": 1, "skipped": [], "scheduled_round_running": False,
    }}
    rounds_done(kb, 2)
    assert downloads == [] and extractions == [], "an unchanged folder was downloaded or extracted"

    shutil.copy(PDF / "dmca.pdf", drive / "tracemonkey.pdf")  # new bytes under the same name
    shutil.copy(PDF / "i1040nr.pdf", drive / "form.pdf")  # a new file
    (drive / "paraphrase.pdf").unlink()  # a file gone
    sync(kb, notebook_id)
    rounds_done(kb, 3)
    after = by_name(settled(kb, notebook_id, 2))
    assert sorted(after) == ["form.pdf", "tracemonkey.pdf"]
    assert after["tracemonkey.pdf"]["id"] == before["tracemonkey.pdf"]["id"], "a changed file is the same document"
    assert all(d["status"] == AVAILABLE for d in after.values())
    assert len(downloads) == 2 and len(extractions) == 2
    members = kb.read(lambda s: set(s.scalars(select(NotebookResource.resource_id))))
    assert before["paraphrase.pdf"]["resource_id"] not in members
    hits = kb.call("GET", f"/api/notebooks/{notebook_id}/search?q=circumvention+technological+measures&limit=5").json
    assert after["tracemonkey.pdf"]["resource_id"] in {h["resource_id"] for h in hits["results"]}


def test_an_empty_folder_loses_its_documents_an_unreadable_one_keeps_them(kb: Instance, drive: Path) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    link(kb, notebook_id, drive)
    settled(kb, notebook_id, 2)
    rounds_done(kb, 1)

    moved = drive.with_name("team-moved")
    drive.rename(moved)  # the folder cannot be read where it was linked
    sync(kb, notebook_id)
    rounds_done(kb, 2)
    assert len(documents(kb, notebook_id)) == 2, "an unreadable folder's documents were deleted"
    folder = kb.call("GET", f"/api/notebooks/{notebook_id}/linked-folders").json["items"][0]
    assert folder["last_sync_outcome"] == "skipped" and folder["last_sync_error"]["code"] == "FOLDER_UNAVAILABLE"

    moved.rename(drive)
    if os.geteuid() != 0:  # root reads a folder whatever its mode
        drive.chmod(0)
        try:
            sync(kb, notebook_id)
            rounds_done(kb, 3)
            assert len(documents(kb, notebook_id)) == 2, "a folder without permission lost its documents"
        finally:
            drive.chmod(0o755)

    for path in drive.iterdir():
        path.unlink()
    sync(kb, notebook_id)
    rounds_done(kb, 4 if os.geteuid() != 0 else 3)
    assert documents(kb, notebook_id) == []
    assert not any(r.startswith("linked:") for r in kb.read(lambda s: list(s.scalars(select(NotebookResource.resource_id)))))


def test_one_folder_in_two_notebooks_never_interferes(kb: Instance, drive: Path) -> None:
    first, job_one = kb.create_notebook(["dmca"])
    second, job_two = kb.create_notebook(["naacl"])
    kb.wait_job_end(job_one)
    kb.wait_job_end(job_two)
    one = link(kb, first, drive)
    link(kb, second, drive)
    settled(kb, first, 2)
    settled(kb, second, 2)
    rounds_done(kb, 2)

    assert kb.call("DELETE", f"/api/notebooks/{first}/linked-folders/{one['id']}").status_code == 204
    assert documents(kb, first) == []
    assert [d["status"] for d in settled(kb, second, 2)] == [AVAILABLE, AVAILABLE]
    (drive / "paraphrase.pdf").unlink()
    sync(kb, second)
    rounds_done(kb, 3)
    assert [d["name"] for d in settled(kb, second, 1)] == ["tracemonkey.pdf"]
    assert kb.read(lambda s: s.scalar(select(func.count()).select_from(LinkedDocument))) == 1


def test_a_failed_document_is_not_retried_by_a_sync_only_by_the_retry_endpoint(
    kb: Instance, drive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (drive / "broken.pdf").write_bytes(b"%PDF-1.7\nnot really a PDF\n")
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    link(kb, notebook_id, drive)
    broken = by_name(settled(kb, notebook_id, 3))["broken.pdf"]
    assert broken["status"] == "FAIL" and broken["error"]["code"]
    rounds_done(kb, 1)

    extractions = counted(monkeypatch, "pipeline.source_processing.extract_read")
    shutil.copy(PDF / "dmca.pdf", drive / "added.pdf")  # so that this sync's changes start a job
    answer = sync(kb, notebook_id).json["data"]
    assert answer["skipped"] == [] and answer["matched_doc_count"] == 3
    rounds_done(kb, 2)
    documents_now = by_name(settled(kb, notebook_id, 4))
    assert (documents_now["broken.pdf"]["status"], documents_now["added.pdf"]["status"]) == ("FAIL", AVAILABLE)
    read = [call[0].inputs.filename for call in extractions]
    assert read == ["added.pdf"], "a sync retried a failed, unchanged document"

    retried = kb.call("POST", "/api/knowledge-base/documents/retry-failed", json={"knowledge_base_id": notebook_id})
    assert retried.json["data"]["matched_doc_count"] == 1 and retried.json["data"]["extract_again_count"] == 1
    kb.wait_for(lambda: len(extractions) == 2, "the failed document to be extracted again")
    assert extractions[-1][0].inputs.filename == "broken.pdf"
    assert by_name(settled(kb, notebook_id, 4))["broken.pdf"]["status"] == "FAIL"
    rounds_done(kb, 2)

    os.utime(drive / "broken.pdf", (1_900_000_000, 1_900_000_000))  # re-saved: same bytes, a new modified time
    sync(kb, notebook_id)
    rounds_done(kb, 3)
    kb.wait_for(lambda: len(extractions) == 3, "a touched failed document to be extracted again")
    assert extractions[-1][0].inputs.filename == "broken.pdf"


def test_the_sync_call_validates_plans_and_refuses_as_the_seed_says(kb: Instance, drive: Path) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    unsupported = sync(kb, source="sharepoint")
    assert unsupported.status_code == 400
    assert unsupported.json == {
        "code": 40000, "message": "Unsupported source: sharepoint. Supported: google-drive, folder",
        "error": "UNSUPPORTED_SOURCE",
    }
    unknown = sync(kb, "deadbeefdeadbeefdeadbeefdeadbeef", notebook_id).json["data"]
    assert unknown["accepted"] is True and unknown["matched_knowledge_base_count"] == 0
    assert unknown["skipped"] == [
        {"reason": "KNOWLEDGE_BASE_NOT_FOUND", "message": "Knowledge base does not exist or does not belong to this caller.",
         "knowledge_base_id": "deadbeefdeadbeefdeadbeefdeadbeef"},
        {"reason": "NO_LINKED_FOLDER", "message": "This knowledge base has no linked folder of this source.",
         "knowledge_base_id": notebook_id},
    ]
    nothing = kb.call("POST", "/api/knowledge-base/sync", json={"source": "folder", "knowledge_base_ids": []}).json["data"]
    assert (nothing["matched_knowledge_base_count"], nothing["matched_folder_count"]) == (0, 0), "[] must not mean all"
    outside = kb.call(
        "POST", f"/api/notebooks/{notebook_id}/linked-folders", json={"connector": "folder", "folder": "/etc"}
    )
    assert outside.status_code == 400 and outside.json["code"] == "FOLDER_NOT_ALLOWED"
    bad_schedule = kb.call(
        "POST", f"/api/notebooks/{notebook_id}/linked-folders",
        json={"connector": "folder", "folder": str(drive), "schedule": 5},
    )
    assert bad_schedule.status_code == 400 and bad_schedule.json["code"] == "SCHEDULE_INVALID"


def test_a_sync_while_the_callers_previous_one_runs_is_not_accepted_and_a_scheduled_round_never_blocks(
    kb: Instance, drive: Path
) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    link(kb, notebook_id, drive)
    settled(kb, notebook_id, 2)
    rounds_done(kb, 1)
    user_id = kb.read(lambda s: s.scalar(select(SyncRun.owner_id)))

    def running_round(trigger: str) -> str:
        def start(session: Any) -> str:
            run = linked.start_run(
                session, owner_id=user_id, vault_hash=kb.settings.vault_hash, workspace_id="w", trigger=trigger,
                connector="folder", folder_ids=[], lease=timedelta(minutes=5),
            )
            return run.id

        return kb.write(start)

    scheduled = running_round("scheduled")
    answer = sync(kb, notebook_id).json["data"]
    assert answer["accepted"] is True and answer["scheduled_round_running"] is True
    manual = running_round("manual")
    refused = sync(kb, notebook_id).json["data"]
    assert refused["accepted"] is False and refused["reason"] == "SYNC_IN_PROGRESS"
    assert refused["scheduled_round_running"] is True
    for run_id in (manual, scheduled):
        kb.write(lambda s, run_id=run_id: setattr(s.get(SyncRun, run_id), "state", "done"))
    rounds_done(kb, 4)
    assert sync(kb, notebook_id).json["data"] == {
        "accepted": True, "source": "folder", "matched_knowledge_base_count": 1, "matched_doc_count": 2,
        "matched_folder_count": 1, "skipped": [], "scheduled_round_running": False,
    }


def test_one_call_a_minute_per_caller_across_every_route(launch: Callable[..., Instance], drive: Path) -> None:
    instance = launch(GNOSI_SYNC_FOLDER_ROOTS=str(drive.parent))
    first = sync(instance, route="/api/agent/knowledge-base/sync")
    assert first.status_code == 200 and first.json["code"] == 0
    for route in ("/api/workflow/knowledge-base/sync", "/api/knowledge-base/sync", "/api/agent/knowledge-base/sync"):
        again = sync(instance, route=route)
        assert again.status_code == 429 and again.json["code"] == 42900 and again.json["error"] == "RATE_LIMITED"
        assert int(again.headers["Retry-After"]) >= 1


def test_a_scheduled_round_and_a_manual_one_at_once_make_no_duplicates(kb: Instance, drive: Path) -> None:
    """Two rounds over the same folder in two threads at the same moment, with files new to both:
    one document, one membership and one blob per file."""
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    for index in range(20):
        (drive / f"note-{index:02d}.txt").write_text(f"Note {index}: the quarterly figures of team {index}.\n")
    folder_id = link(kb, notebook_id, drive, schedule=60)["id"]
    rounds_done(kb, 1)
    for path in drive.glob("note-*.txt"):
        path.write_text(path.read_text() + "Revised.\n")
    for index in range(20, 30):
        (drive / f"note-{index:02d}.txt").write_text(f"Note {index}, added later.\n")

    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def round_in_thread() -> None:
        try:
            with kb.app.app_context():
                barrier.wait()
                sync_folder(kb.app.extensions["gnosi"], folder_id)
        except BaseException as err:  # noqa: BLE001 (reported below)
            failures.append(err)

    threads = [threading.Thread(target=round_in_thread) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    rows = kb.read(lambda s: list(s.scalars(select(LinkedDocument.file_id))))
    assert sorted(rows) == sorted(p.name for p in drive.iterdir()), "a file has two documents, or none"
    members = kb.read(lambda s: [r for r in s.scalars(select(NotebookResource.resource_id)) if r.startswith("linked:")])
    assert len(members) == len(set(members)) == len(rows)


def test_a_folder_whose_schedule_is_due_is_synced_by_the_scheduled_round_once(kb: Instance, drive: Path) -> None:
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    folder_id = link(kb, notebook_id, drive, schedule=600)["id"]
    settled(kb, notebook_id, 2)
    rounds_done(kb, 1)
    shutil.copy(PDF / "i1040nr.pdf", drive / "form.pdf")

    def beat_tick() -> int:
        """What beat's ``sync.scheduled`` message runs (no result backend: called here)."""
        with kb.app.app_context():
            return scheduled_rounds()

    assert beat_tick() == 0, "a folder was synced 600 s early"
    kb.write(lambda s: setattr(s.get(LinkedFolder, folder_id), "next_sync_at", utcnow() - timedelta(seconds=1)))
    assert beat_tick() == 1
    assert beat_tick() == 0, "the same due folder was taken twice"
    rounds_done(kb, 2)
    assert sorted(d["name"] for d in settled(kb, notebook_id, 3)) == ["form.pdf", "paraphrase.pdf", "tracemonkey.pdf"]
    triggers = kb.read(lambda s: sorted(s.scalars(select(SyncRun.trigger))))
    assert triggers == ["link", "scheduled"]
    next_at = kb.read(lambda s: s.get(LinkedFolder, folder_id).next_sync_at)
    assert timedelta(seconds=590) < next_at - utcnow() <= timedelta(seconds=600)


def test_a_download_the_drive_refused_for_a_moment_is_tried_again_by_the_next_round(
    kb: Instance, drive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.connectors.folder import FolderConnector
    from pipeline.connectors.google_drive import DRIVE_UNAVAILABLE
    from pipeline.types import PipelineError

    real, refused = FolderConnector.download, []

    def busy_once(self: FolderConnector, folder_id: str, file_id: str, into: Any, max_bytes: int) -> int:
        if file_id == "paraphrase.pdf" and not refused:
            refused.append(file_id)
            raise PipelineError(DRIVE_UNAVAILABLE, "The drive is busy.")
        return real(self, folder_id, file_id, into, max_bytes)

    monkeypatch.setattr(FolderConnector, "download", busy_once)
    notebook_id, job_id = kb.create_notebook(["dmca"])
    kb.wait_job_end(job_id)
    link(kb, notebook_id, drive)
    rounds_done(kb, 1)
    assert by_name(documents(kb, notebook_id))["paraphrase.pdf"]["status"] == "FAIL"
    sync(kb, notebook_id)  # the file did not change: a lasting failure would be skipped
    rounds_done(kb, 2)
    assert by_name(settled(kb, notebook_id, 2))["paraphrase.pdf"]["status"] == AVAILABLE
