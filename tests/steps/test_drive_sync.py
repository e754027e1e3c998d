"""Linked Google Drive folders against a local Drive (tests/support/fake_drive.py: the v3 endpoints
the connector uses and Google's token endpoint, with their documented shapes), through the real
API, sync rounds and ingestion steps (conftest.py): pagination, token refresh, a revoked
authorisation, a folder that cannot be read, the service account, secrets never shown."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from storage.models import DriveAuthorization, SyncRun
from support.fake_drive import FakeDrive, service_account_info
from support.services import CORPUS

if TYPE_CHECKING:
    from steps.conftest import Instance

FILES = 150  # more than one page of Drive's default 100


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    with FakeDrive() as fake:
        yield fake


def drive_env(drive: FakeDrive, **extra: str) -> dict[str, str]:
    return {
        "GNOSI_DRIVE_API_URL": drive.url, "GNOSI_DRIVE_TOKEN_URL": drive.token_url, "GNOSI_SYNCS_PER_MINUTE": "1000",
        **extra,
    }


@pytest.fixture
def kb(launch: Callable[..., Instance], drive: FakeDrive) -> Instance:
    return launch(**drive_env(drive))


def authorize(instance: Instance, drive: FakeDrive) -> str:
    refresh_token = drive.issue_refresh_token()
    answer = instance.call("PUT", "/api/drive/authorization", json={
        "client_id": drive.client_id, "client_secret": drive.client_secret, "refresh_token": refresh_token,
    })
    assert answer.status_code == 200 and answer.json["authorized"] is True, answer.json
    assert refresh_token not in answer.get_data(as_text=True) and drive.client_secret not in answer.get_data(as_text=True)
    return refresh_token


def team_folder(drive: FakeDrive, count: int = 3) -> tuple[str, list[str]]:
    folder = drive.add_folder("Team reports")
    files = [
        drive.add_file(folder, f"report-{i:03d}.txt", f"Report {i}: the depot in sector {i} shipped {i * 7} crates.\n".encode(), "text/plain")
        for i in range(count)
    ]
    return folder, files


def link(instance: Instance, notebook_id: str, folder: str) -> Any:
    return instance.call(
        "POST", f"/api/notebooks/{notebook_id}/linked-folders", json={"connector": "google-drive", "folder": folder}
    )


def documents(instance: Instance, notebook_id: str) -> list[dict[str, Any]]:
    return instance.call("GET", f"/api/knowledge-base/{notebook_id}/documents?per_page=500").json["data"]["items"]


def settled(instance: Instance, notebook_id: str, count: int) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | None:
        items = documents(instance, notebook_id)
        return items if len(items) == count and all(d["status"] != "INDEXING" for d in items) else None

    return instance.wait_for(probe, lambda: f"{count} settled documents", timeout=120)


def rounds_done(instance: Instance, count: int) -> None:
    def finished() -> bool:
        states = instance.read(lambda s: list(s.scalars(select(SyncRun.state))))
        return len(states) >= count and all(state != "running" for state in states)

    instance.wait_for(finished, f"{count} sync rounds to end")


def sync(instance: Instance, *ids: str) -> dict[str, Any]:
    answer = instance.call("POST", "/api/knowledge-base/sync", json={"source": "google-drive", "knowledge_base_ids": list(ids)})
    assert answer.status_code == 200 and answer.json["code"] == 0, answer.json
    return answer.json["data"]


def notebook(instance: Instance) -> str:
    notebook_id, job_id = instance.create_notebook(["dmca"])
    instance.wait_job_end(job_id)
    return notebook_id


def linked_team(instance: Instance, drive: FakeDrive, count: int = 3) -> tuple[str, str, list[str], str]:
    """An authorised owner's notebook that links a Drive folder of ``count`` reports, once its
    first round and ingestion are done: (notebook id, folder id, file ids, refresh token)."""
    refresh_token = authorize(instance, drive)
    folder, files = team_folder(drive, count)
    notebook_id = notebook(instance)
    linked = link(instance, notebook_id, folder)
    assert linked.status_code == 201, linked.json
    settled(instance, notebook_id, count)
    rounds_done(instance, 1)
    return notebook_id, folder, files, refresh_token


def test_a_drive_folder_over_several_pages_is_synced_and_an_unchanged_one_downloads_nothing(
    kb: Instance, drive: FakeDrive
) -> None:
    authorize(kb, drive)
    folder, _ = team_folder(drive, FILES)
    notebook_id = notebook(kb)
    linked = link(kb, notebook_id, folder)
    assert linked.status_code == 201 and linked.json["name"] == "Team reports", linked.json
    items = settled(kb, notebook_id, FILES)
    assert {d["status"] for d in items} == {"AVAILABLE"}
    assert any(r["params"].get("pageToken") for r in drive.requests if r["path"] == "/drive/v3/files")
    hits = kb.call("GET", f"/api/notebooks/{notebook_id}/search?q=sector+117+crates&limit=3").json["results"]
    assert hits and {d["resource_id"]: d["name"] for d in items}[hits[0]["resource_id"]] == "report-117.txt"
    rounds_done(kb, 1)

    downloads = drive.media_requests()
    answer = sync(kb, notebook_id)
    assert (answer["accepted"], answer["matched_doc_count"], answer["matched_folder_count"]) == (True, FILES, 1)
    rounds_done(kb, 2)
    assert drive.media_requests() == downloads, "an unchanged Drive folder was downloaded again"


def test_an_expired_access_token_is_refreshed_and_kept(kb: Instance, drive: FakeDrive) -> None:
    notebook_id, folder, files, _ = linked_team(kb, drive)
    sealed_before = kb.read(lambda s: s.scalars(select(DriveAuthorization.sealed)).one())

    drive.expire_access_tokens()
    grants = len(drive.token_requests())
    drive.add_file(folder, "late.txt", b"A late report about the harbour.\n", "text/plain")
    sync(kb, notebook_id)
    rounds_done(kb, 2)
    assert len(settled(kb, notebook_id, 4)) == 4
    assert len(drive.token_requests()) == grants + 1, "the expired token was not refreshed exactly once"
    assert kb.read(lambda s: s.scalars(select(DriveAuthorization.sealed)).one()) != sealed_before, "new token not kept"
    assert kb.call("GET", "/api/drive/authorization").json["authorized"] is True


def test_a_revoked_authorisation_skips_the_owners_knowledge_bases_and_deletes_nothing(
    kb: Instance, drive: FakeDrive, caplog: pytest.LogCaptureFixture
) -> None:
    notebook_id, _, _, refresh_token = linked_team(kb, drive)

    drive.revoke(refresh_token)
    drive.expire_access_tokens()
    assert sync(kb, notebook_id)["accepted"] is True  # nothing known yet: the round finds out
    rounds_done(kb, 2)
    assert len(documents(kb, notebook_id)) == 3, "a revoked authorisation deleted documents"
    state = kb.call("GET", "/api/drive/authorization").json
    assert state["authorized"] is False and state["revoked_at"]
    answer = sync(kb, notebook_id)
    assert answer["matched_knowledge_base_count"] == 0 and answer["matched_doc_count"] == 0
    assert answer["skipped"] == [{
        "reason": "DRIVE_NOT_AUTHORIZED",
        "message": "The document owner has not authorized Google Drive, or the authorization has expired.",
        "knowledge_base_id": notebook_id, "doc_count": 3,
    }]
    assert refresh_token not in caplog.text and drive.client_secret not in caplog.text

    authorize(kb, drive)  # authorising again clears the refusal
    assert sync(kb, notebook_id)["matched_doc_count"] == 3


def test_a_folder_that_can_no_longer_be_read_keeps_its_documents_an_empty_one_loses_them(
    kb: Instance, drive: FakeDrive
) -> None:
    notebook_id, folder, files, _ = linked_team(kb, drive)

    elsewhere = drive.add_folder("Archive")
    drive.move(folder, elsewhere)  # moved: still readable by id, so it still syncs
    for file_id in files[:2]:
        drive.trash(file_id)
    sync(kb, notebook_id)
    rounds_done(kb, 2)
    assert [d["name"] for d in settled(kb, notebook_id, 1)] == ["report-002.txt"]

    drive.remove(folder)  # gone from the account's view: Drive answers 404
    sync(kb, notebook_id)
    rounds_done(kb, 3)
    assert len(documents(kb, notebook_id)) == 1, "an unreadable folder's documents were deleted"
    linked = kb.call("GET", f"/api/notebooks/{notebook_id}/linked-folders").json["items"][0]
    assert linked["last_sync_error"]["code"] == "FOLDER_UNAVAILABLE"


def test_an_empty_drive_folder_loses_its_documents(kb: Instance, drive: FakeDrive) -> None:
    notebook_id, folder, files, _ = linked_team(kb, drive)
    for file_id in files:
        drive.remove(file_id)
    sync(kb, notebook_id)
    rounds_done(kb, 2)
    assert documents(kb, notebook_id) == []


def test_linking_without_an_authorisation_is_refused(kb: Instance, drive: FakeDrive) -> None:
    folder, _ = team_folder(drive)
    refused = link(kb, notebook(kb), folder)
    assert refused.status_code == 403 and refused.json["code"] == "DRIVE_NOT_AUTHORIZED"


def test_the_service_account_reads_drive_for_everyone_and_a_google_doc_arrives_as_pdf(
    launch: Callable[..., Instance], drive: FakeDrive, tmp_path: Path
) -> None:
    info = service_account_info()
    drive.register_service_account(info)
    key_file = tmp_path / "service-account.json"
    key_file.write_text(json.dumps(info))
    instance = launch(**drive_env(drive, GNOSI_DRIVE_SERVICE_ACCOUNT_FILE=str(key_file)))
    folder = drive.add_folder("Shared with the service account")
    drive.add_file(folder, "Meeting notes", (CORPUS / "pdf" / "dmca.pdf").read_bytes(), "application/vnd.google-apps.document")
    notebook_id = notebook(instance)
    assert link(instance, notebook_id, folder).status_code == 201
    [document] = settled(instance, notebook_id, 1)
    assert (document["name"], document["mime_type"], document["status"]) == ("Meeting notes.pdf", "application/pdf", "AVAILABLE")
    assert instance.call("GET", "/api/drive/authorization").json["authorized"] is True


def test_a_refusal_seen_with_an_older_authorisation_leaves_the_owners_new_one_alone(kb: Instance, drive: FakeDrive) -> None:
    """A round that read the authorisation before its owner stored a new one must not mark the
    new one revoked when Google refuses the old."""
    from app.services.drive_connectors import note_refused
    from storage.models import utcnow

    authorize(kb, drive)
    read_by_a_round = utcnow()
    time.sleep(0.01)
    authorize(kb, drive)
    user_id = kb.read(lambda s: s.scalars(select(DriveAuthorization.user_id)).one())
    with kb.app.app_context():
        note_refused(kb.app.extensions["gnosi"], user_id, read_by_a_round)
        assert kb.call("GET", "/api/drive/authorization").json["authorized"] is True
        note_refused(kb.app.extensions["gnosi"], user_id, utcnow())
    assert kb.call("GET", "/api/drive/authorization").json["authorized"] is False
