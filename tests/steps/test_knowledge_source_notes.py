"""Source notes through a real Celery worker (docs/decisions/0021): a notebook's PDF goes through
parse → plan → write → check → publish over the real API, reading the ``extract`` step's cache;
every claim's evidence resolves to its page; a duplicate returns the existing version; a restart
keeps the stages before it; a deleted source publishes nothing; a unit that fails its checks is
left out with a coverage note."""
from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from sqlalchemy import select

from pipeline.extractors import extract
from pipeline.knowledge.offline import OfflineNoteWriter
from pipeline.knowledge.types import NoteDraft
from pipeline.types import PipelineError
from steps.conftest import wait_for
from steps.test_task_contract import ingest
from storage.knowledge import jobs
from storage.models import KnowledgeBlock, KnowledgeJob, KnowledgeSourceNote
from tasks.knowledge import MODEL_RETRIES
from support.services import CORPUS

if TYPE_CHECKING:
    from steps.conftest import Instance

ENDED = ("completed", "completed_with_warnings", "failed", "cancelled")
PDF = {"naacl": "naacl06-shinyama.pdf", "dmca": "dmca.pdf"}


@pytest.fixture
def kb(instance: Instance) -> tuple[Instance, str]:
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    return instance, notebook_id


def add(instance: Instance, notebook_id: str, resource_id: str, **body: Any) -> Any:
    return instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/sources", json={"resource_id": resource_id, **body})


def finished(instance: Instance, notebook_id: str, job_id: str, timeout: float = 120) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        shown = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/jobs/{job_id}").json
        return shown if shown["state"] in ENDED else None

    return wait_for(ended, f"knowledge job {job_id} to end", timeout)


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Count the offline writer's calls of ``name`` (the original still runs)."""
    real, calls = getattr(OfflineNoteWriter, name), []

    def wrapper(self: OfflineNoteWriter, document: Any, plan: Any, *rest: Any) -> Any:
        calls.append(plan.key)
        return real(self, document, plan, *rest)

    monkeypatch.setattr(OfflineNoteWriter, name, wrapper)
    return calls


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("-\n", ""))


def test_a_pdf_becomes_a_source_note_whose_every_claim_opens_its_page(kb: tuple[Instance, str]) -> None:
    instance, notebook_id = kb
    response = add(instance, notebook_id, "naacl")
    assert response.status_code == 202, response.json
    job = finished(instance, notebook_id, response.json["version"]["job"]["id"])
    assert job["state"] in ("completed", "completed_with_warnings"), job
    assert job["units"]["total"] == job["units"]["checked"] and job["units"]["passed"] >= 3
    version = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources/{response.json['source']['id']}").json["versions"][0]
    source_note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{version['source_note_version_id']}").json
    assert len(source_note["toc"]) == job["units"]["passed"] and source_note["current"]
    pages: dict[int, str] = {}  # a page's text and its tables are segments of their own
    for segment in extract((CORPUS / "pdf" / PDF["naacl"]).read_bytes(), filename=PDF["naacl"]).segments:
        pages[segment.locator["page"]] = pages.get(segment.locator["page"], "") + "\n" + segment.text
    claims = 0
    for entry in source_note["toc"]:
        note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{entry['note_id']}").json
        assert note["version"]["id"] == entry["note_version_id"] and note["claims"]
        for evidence in note["evidence"]:
            claims += 1
            assert squashed(evidence["snippet"]) in squashed(pages[evidence["page"]]), evidence
            assert evidence["file_url"].endswith(f"#page={evidence['page']}")
            block = instance.read(lambda s, e=evidence: s.get(KnowledgeBlock, (version["id"], e["block_ordinal"])))
            assert block.page == evidence["page"]
    assert claims >= len(source_note["toc"])
    markdown = instance.call("GET", source_note["markdown_url"])
    assert markdown.status_code == 200 and markdown.mimetype == "text/markdown"
    assert all(entry["title"] in markdown.get_data(as_text=True) for entry in source_note["toc"])


def test_the_same_bytes_again_return_the_existing_version_and_job_unless_a_new_version_is_asked(kb: tuple[Instance, str]) -> None:
    instance, notebook_id = kb
    first = add(instance, notebook_id, "dmca")
    assert first.status_code == 202
    again = add(instance, notebook_id, "dmca")
    assert again.status_code == 200 and again.json["duplicate"] is True
    assert again.json["version"]["id"] == first.json["version"]["id"]
    assert again.json["version"]["job"]["id"] == first.json["version"]["job"]["id"]
    forced = add(instance, notebook_id, "dmca", new_version=True)
    assert forced.status_code == 202 and forced.json["version"]["number"] == 2
    assert forced.json["source"]["id"] == first.json["source"]["id"]
    first_job = finished(instance, notebook_id, first.json["version"]["job"]["id"])
    if first_job["state"] == "cancelled":  # it had not published when version 2 took its place
        assert first_job["error"]["code"] == "SOURCE_CHANGED"
    assert finished(instance, notebook_id, forced.json["version"]["job"]["id"])["state"].startswith("completed")


def test_a_restart_from_check_keeps_the_notes_and_from_write_writes_them_again(
    kb: tuple[Instance, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance, notebook_id = kb
    writes = counted(monkeypatch, "write")
    job_id = add(instance, notebook_id, "naacl").json["version"]["job"]["id"]
    units = finished(instance, notebook_id, job_id)["units"]["total"]
    assert len(writes) == units
    restart = instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/jobs/{job_id}/restart", json={"stage": "check"})
    assert restart.status_code == 202 and restart.json["units"]["written"] == units and restart.json["units"]["checked"] == 0
    assert finished(instance, notebook_id, job_id)["units"]["checked"] == units
    assert len(writes) == units  # not one note written again
    instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/jobs/{job_id}/restart", json={"stage": "write"})
    assert finished(instance, notebook_id, job_id)["state"].startswith("completed")
    assert len(writes) == 2 * units
    snapshots = instance.read(lambda s: s.scalar(select(KnowledgeSourceNote)))
    assert snapshots is not None


def test_a_unit_a_restart_leaves_out_leaves_the_search_and_feeds_nothing(
    kb: tuple[Instance, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review finding: a restart that left a unit out kept that unit's note from the publish
    before active: out of the source note, yet found by the search and counted by the concepts."""
    instance, notebook_id = kb
    base = f"/api/notebooks/{notebook_id}/knowledge"
    job_id = add(instance, notebook_id, "dmca").json["version"]["job"]["id"]
    assert finished(instance, notebook_id, job_id)["state"].startswith("completed")
    source = instance.call("GET", f"{base}/sources").json["items"][0]
    toc = instance.call("GET", f"{base}/source-notes/{source['active_version']['source_note_version_id']}").json["toc"]
    left_out = toc[1]
    found = instance.call("GET", f"{base}/search", query_string={"q": left_out["title"], "limit": 20}).json["items"]
    assert left_out["note_id"] in {hit["id"] for hit in found}
    real = OfflineNoteWriter.write

    def failing(self: OfflineNoteWriter, document: Any, plan: Any) -> NoteDraft:
        if plan.key == left_out["plan_key"]:
            raise PipelineError("UNIT_UNREADABLE", "This unit could not be written this time.")
        return real(self, document, plan)

    monkeypatch.setattr(OfflineNoteWriter, "write", failing)
    instance.call("POST", f"{base}/jobs/{job_id}/restart", json={"stage": "write"})
    assert finished(instance, notebook_id, job_id)["state"] == "completed_with_warnings"
    note = instance.call("GET", f"{base}/notes/{left_out['note_id']}").json
    assert note["state"] == "dropped", note
    found = instance.call("GET", f"{base}/search", query_string={"q": left_out["title"], "limit": 20}).json["items"]
    assert left_out["note_id"] not in {hit["id"] for hit in found}
    edit = instance.call("PATCH", f"{base}/notes/{note['id']}/blocks/{note['blocks'][0]['key']}",
                         json={"expected_version_id": note["version"]["id"], "text": "Kept anyway."})
    assert edit.status_code == 409 and edit.json["code"] == "NOTE_DELETED"

    monkeypatch.setattr(OfflineNoteWriter, "write", real)  # written again: the unit is back
    instance.call("POST", f"{base}/jobs/{job_id}/restart", json={"stage": "write"})
    assert finished(instance, notebook_id, job_id)["state"] == "completed"
    assert instance.call("GET", f"{base}/notes/{left_out['note_id']}").json["state"] == "active"


def test_a_unit_that_fails_its_checks_is_left_out_with_a_coverage_note(
    kb: tuple[Instance, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance, notebook_id = kb
    real = OfflineNoteWriter.write

    def misquoting(self: OfflineNoteWriter, document: Any, plan: Any) -> NoteDraft:
        draft = real(self, document, plan)
        if plan.key == "u002":
            draft.evidence = [type(e)(**{**e.__dict__, "snippet": "words this page never said"}) for e in draft.evidence]
        return draft

    monkeypatch.setattr(OfflineNoteWriter, "write", misquoting)
    job = finished(instance, notebook_id, add(instance, notebook_id, "naacl").json["version"]["job"]["id"])
    assert job["state"] == "completed_with_warnings"
    assert [w["unit"] for w in job["warnings"]] == ["u002"] and job["warnings"][0]["pages"]
    version_id = job["source_version_id"]
    toc = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"][0]["active_version"]
    source_note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{toc['source_note_version_id']}").json
    assert "u002" not in {entry["plan_key"] for entry in source_note["toc"]} and source_note["source_version"]["id"] == version_id


def test_deleting_the_source_stops_its_job_and_nothing_is_published(
    kb: tuple[Instance, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance, notebook_id = kb
    real, deleted = OfflineNoteWriter.write, []

    def deleting_first(self: OfflineNoteWriter, document: Any, plan: Any) -> NoteDraft:
        if not deleted:  # the source is deleted while its first unit is being written
            source_id = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"][0]["id"]
            deleted.append(instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{source_id}").json)
        return real(self, document, plan)

    monkeypatch.setattr(OfflineNoteWriter, "write", deleting_first)
    job = finished(instance, notebook_id, add(instance, notebook_id, "naacl").json["version"]["job"]["id"])
    assert deleted[0]["state"] == "deleted" and job["state"] == "cancelled"
    assert instance.read(lambda s: s.scalar(select(KnowledgeSourceNote))) is None
    assert instance.read(lambda s: s.get(KnowledgeJob, job["id"]).state) == "cancelled"


def test_a_source_restored_after_its_deletion_stopped_its_job_takes_the_job_up_where_it_stopped(
    kb: tuple[Instance, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review finding: a source deleted while its job ran and restored soon after stayed without a
    source note for good (the job was cancelled, and nothing started it again)."""
    instance, notebook_id = kb
    base = f"/api/notebooks/{notebook_id}/knowledge"
    real, written, deleted = OfflineNoteWriter.write, [], []

    def deleting_at_the_third(self: OfflineNoteWriter, document: Any, plan: Any) -> NoteDraft:
        written.append(plan.key)
        if len(written) == 3 and not deleted:
            source_id = instance.call("GET", f"{base}/sources").json["items"][0]["id"]
            deleted.append(instance.call("DELETE", f"{base}/sources/{source_id}").json)
        return real(self, document, plan)

    monkeypatch.setattr(OfflineNoteWriter, "write", deleting_at_the_third)
    added = add(instance, notebook_id, "naacl").json
    job_id = added["version"]["job"]["id"]
    stopped = finished(instance, notebook_id, job_id)
    assert (stopped["state"], stopped["error"]["code"]) == ("cancelled", "SOURCE_DELETED"), stopped
    kept = instance.read(lambda s: len(jobs.outputs(s, job_id, "write")))
    written_before = len(written)

    restored = instance.call("POST", f"{base}/sources/{added['source']['id']}/restore")
    assert restored.status_code == 200 and restored.json["state"] == "active"
    job = finished(instance, notebook_id, job_id)
    assert job["state"].startswith("completed") and job["error"] is None, job
    assert len(written) - written_before == job["units"]["total"] - kept, "only the units without a stored note are written"
    snapshot = instance.call("GET", f"{base}/sources/{added['source']['id']}").json["active_version"]["source_note_version_id"]
    assert instance.call("GET", f"{base}/source-notes/{snapshot}").json["toc"]

    other: list[dict[str, Any]] = []  # deleted while its job runs, then the job cancelled by a person: it stays cancelled

    def deleting_then_cancelling(self: OfflineNoteWriter, document: Any, plan: Any) -> NoteDraft:
        if not other[0].get("stopped"):
            other[0]["stopped"] = True
            instance.call("DELETE", f"{base}/sources/{other[0]['source']['id']}")
            instance.call("POST", f"{base}/jobs/{other[0]['version']['job']['id']}/cancel")
        return real(self, document, plan)

    monkeypatch.setattr(OfflineNoteWriter, "write", deleting_then_cancelling)
    other.append(add(instance, notebook_id, "dmca").json)
    assert finished(instance, notebook_id, other[0]["version"]["job"]["id"])["state"] == "cancelled"
    instance.call("POST", f"{base}/sources/{other[0]['source']['id']}/restore")
    assert instance.call("GET", f"{base}/jobs/{other[0]['version']['job']['id']}").json["state"] == "cancelled"


def test_refusals_say_why_and_change_nothing(kb: tuple[Instance, str]) -> None:
    instance, notebook_id = kb
    assert add(instance, notebook_id, "nobody").json["code"] == "RESOURCE_NOT_IN_NOTEBOOK"
    assert add(instance, notebook_id, "naacl", new_version="yes").json["code"] == "FIELD_INVALID"
    assert add(instance, "0" * 32, "naacl").json["code"] == "NOTEBOOK_NOT_FOUND"
    assert instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{'0' * 32}").json["code"] == "NOTE_NOT_FOUND"
    assert instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/jobs/{'0' * 32}").json["code"] == "KNOWLEDGE_JOB_NOT_FOUND"
    restart = instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/jobs/{'0' * 32}/restart", json={"stage": "later"})
    assert restart.status_code == 400
    assert instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"] == []


# The scripted model: a note of each unit quoting its window's first paragraph, and a judge that
# passes every note.
WRITER_TURN = {"match": "You write one atomic note", "text": json.dumps({
    "title": "{unit_title}", "summary": "{paragraph_sentence}",
    "blocks": [{"kind": "paragraph", "text": "{paragraph_sentence}"}],
    "claims": [{"text": "{paragraph_sentence}", "block": 1, "evidence": [{"ref": 999, "quote": "{paragraph_sentence}"}]}],
}).replace("999", "{paragraph_ref}"), "piece_chars": 40}
JUDGE_TURN = {"match": "You check one atomic note", "text": '{"ok": true, "problems": []}'}


def test_the_model_engine_writes_and_judges_every_unit_and_its_quotes_are_on_their_pages(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    url, log = fake_server([WRITER_TURN, JUDGE_TURN])
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, ingested = ingest(instance)
    assert ingested.state == "succeeded", ingested.error
    response = add(instance, notebook_id, "naacl")
    job = finished(instance, notebook_id, response.json["version"]["job"]["id"])
    assert job["engine"] == "openai-compatible/fake-model" and job["state"].startswith("completed"), job
    requests = [json.loads(line)["messages"][0]["content"] for line in log.read_text().splitlines()]
    writes = sum(WRITER_TURN["match"] in system for system in requests)
    judged = sum(JUDGE_TURN["match"] in system for system in requests)
    assert writes == job["units"]["total"] and judged == job["units"]["passed"] >= 3, (writes, judged, job["units"])
    snapshot = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources/{response.json['source']['id']}").json
    toc = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/"
                               f"{snapshot['active_version']['source_note_version_id']}").json["toc"]
    pages: dict[int, str] = {}
    for segment in extract((CORPUS / "pdf" / PDF["naacl"]).read_bytes(), filename=PDF["naacl"]).segments:
        pages[segment.locator["page"]] = pages.get(segment.locator["page"], "") + "\n" + segment.text
    for entry in toc:
        note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{entry['note_id']}").json
        assert note["version"]["author"] == "engine:openai-compatible/fake-model"
        assert note["evidence"] and all(squashed(e["snippet"]) in squashed(pages[e["page"]]) for e in note["evidence"])


def test_a_note_the_judge_refuses_is_never_published(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    refusing = {**JUDGE_TURN, "text": '{"ok": false, "problems": ["The note leaves out the unit\'s definitions."]}'}
    url, _ = fake_server([WRITER_TURN, refusing])
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, _ = ingest(instance)
    job = finished(instance, notebook_id, add(instance, notebook_id, "dmca").json["version"]["job"]["id"])
    assert job["state"] == "completed_with_warnings" and job["units"]["passed"] == 0
    assert len(job["warnings"]) == job["units"]["total"]
    assert all(w["problems"] == ["The note leaves out the unit's definitions."] for w in job["warnings"])
    source = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"][0]
    snapshot = source["active_version"]["source_note_version_id"]
    assert instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{snapshot}").json["toc"] == []


def test_a_source_note_of_a_file_with_a_chinese_name_downloads_as_markdown(instance: Instance) -> None:
    """Review finding: the export's Content-Disposition was written by hand, so a name outside
    latin-1 could not be sent (and a quote in it broke the header)."""
    name = '数字千年版权法 "摘要".pdf'
    shutil.copyfile(CORPUS / "pdf" / PDF["dmca"], instance.lab.vault.root / "files" / name)
    instance.lab.vault.record("zh", "数字千年版权法", file=f"files/{name}")
    notebook_id, job = ingest(instance, ["zh"])
    assert job.state == "succeeded", job.error
    added = add(instance, notebook_id, "zh")
    assert finished(instance, notebook_id, added.json["version"]["job"]["id"])["state"].startswith("completed")
    source = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources/{added.json['source']['id']}").json
    url = f"/api/notebooks/{notebook_id}/knowledge/source-notes/{source['active_version']['source_note_version_id']}/markdown"
    exported = instance.call("GET", url)
    disposition = exported.headers["Content-Disposition"]
    disposition.encode("latin-1")  # what a server can write
    assert exported.status_code == 200 and exported.mimetype == "text/markdown"
    assert "filename*=UTF-8''" in disposition and quote('数字千年版权法 "摘要".md') in disposition
    assert exported.get_data(as_text=True).startswith("# ")


def test_a_judge_that_cannot_be_read_or_a_model_that_stays_down_leaves_units_out_not_the_job(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review finding: a judge's unreadable answer, or a model down through the task's retries,
    failed the whole job instead of leaving that unit out with a coverage note."""
    monkeypatch.setattr("tasks.knowledge.MODEL_RETRY_SECONDS", 0)
    url, _ = fake_server([WRITER_TURN, {**JUDGE_TURN, "text": "I think it is fine."}])
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, _ = ingest(instance)
    job = finished(instance, notebook_id, add(instance, notebook_id, "dmca").json["version"]["job"]["id"])
    assert job["state"] == "completed_with_warnings" and job["units"]["passed"] == 0, job
    assert all(w["problems"][0].startswith("not judged: ") for w in job["warnings"])


def test_a_judge_down_for_a_moment_is_asked_again_and_the_note_is_not_written_again(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review finding: a unit's note was kept only with its checks, so a judge that could not be
    reached had the retry write the note again (a second model request for nothing)."""
    monkeypatch.setattr("tasks.knowledge.MODEL_RETRY_SECONDS", 0)
    judge = {key: value for key, value in JUDGE_TURN.items() if key != "match"}
    url, log = fake_server([WRITER_TURN, {"status": 503}, judge])  # the first judge request fails, the rest pass
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, _ = ingest(instance)
    job = finished(instance, notebook_id, add(instance, notebook_id, "dmca").json["version"]["job"]["id"])
    assert job["state"] == "completed" and job["units"]["passed"] == job["units"]["total"], job
    systems = [json.loads(line)["messages"][0]["content"] for line in log.read_text().splitlines()]
    assert sum(WRITER_TURN["match"] in system for system in systems) == job["units"]["total"], "each note written once"
    assert sum(JUDGE_TURN["match"] in system for system in systems) == job["units"]["total"] + 1


def test_a_model_down_through_every_retry_leaves_its_units_out(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tasks.knowledge.MODEL_RETRY_SECONDS", 0)
    url, log = fake_server([{"status": 503}])
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    notebook_id, _ = ingest(instance)
    job = finished(instance, notebook_id, add(instance, notebook_id, "dmca").json["version"]["job"]["id"])
    assert job["state"] == "completed_with_warnings" and len(job["warnings"]) == job["units"]["total"], job
    assert all(w["problems"][0].startswith("not written: ") for w in job["warnings"])
    assert len(log.read_text().splitlines()) == job["units"]["total"] * (1 + MODEL_RETRIES)


def test_older_versions_of_a_document_never_crowd_its_current_notes_out_of_a_search(kb: tuple[Instance, str]) -> None:
    """Review finding: the search took a few rows and filtered the current notes out of them
    afterwards, so identical notes of older versions could fill it and leave nothing."""
    instance, notebook_id = kb
    for forced in (False, True, True, True):
        job_id = add(instance, notebook_id, "dmca", new_version=forced).json["version"]["job"]["id"]
        assert finished(instance, notebook_id, job_id)["state"] in ("completed", "completed_with_warnings", "cancelled")
    current = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"][0]["active_version"]
    found = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/search", query_string={
        "q": "Digital Millennium Copyright Act signed into law", "limit": 1}).json["items"]
    note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{found[0]['id']}").json
    assert len(found) == 1 and note["source_version_id"] == current["id"]


def test_a_restarted_job_keeps_what_people_edited_and_deleted(kb: tuple[Instance, str]) -> None:
    """Review finding: publishing again after a restart wrote an engine version over a person's
    edit and brought a deleted note back."""
    instance, notebook_id = kb
    base = f"/api/notebooks/{notebook_id}/knowledge"
    job_id = add(instance, notebook_id, "dmca").json["version"]["job"]["id"]
    job = finished(instance, notebook_id, job_id)
    toc = instance.call("GET", f"{base}/source-notes/{instance.call('GET', f'{base}/sources').json['items'][0]['active_version']['source_note_version_id']}").json["toc"]
    edited, deleted = toc[0]["note_id"], toc[1]["note_id"]
    note = instance.call("GET", f"{base}/notes/{edited}").json
    changed = instance.call("PATCH", f"{base}/notes/{edited}/blocks/{note['blocks'][0]['key']}",
                            json={"expected_version_id": note["version"]["id"], "text": "A person's own wording."}).json
    assert instance.call("DELETE", f"{base}/notes/{deleted}").status_code == 200
    assert instance.call("POST", f"{base}/jobs/{job_id}/restart", json={"stage": "write"}).status_code == 202
    assert finished(instance, notebook_id, job_id)["state"] == job["state"]
    after = instance.call("GET", f"{base}/notes/{edited}").json
    assert after["version"]["id"] == changed["note"]["version"]["id"] and after["version"]["author"].startswith("user:")
    assert instance.call("GET", f"{base}/notes/{deleted}").json["state"] == "deleted"
    snapshot = instance.call("GET", f"{base}/sources").json["items"][0]["active_version"]["source_note_version_id"]
    pinned = {e["note_id"]: e["note_version_id"] for e in instance.call("GET", f"{base}/source-notes/{snapshot}").json["toc"]}
    assert pinned[edited] == after["version"]["id"] and deleted not in pinned
