"""Concepts decided and written by a model (the scripted OpenAI-compatible server, a real process),
through the real API and a real Celery worker, on the two halves of the DMCA summary (A and B, as
in test_concepts_follow_sources): the model's decisions feed one concept from both sources, its
module's points each restate a claim that carries a page, an invented point is dropped, deleting
B rebuilds the module from A; and no write lock is held while the model works."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from steps.conftest import wait_for
from steps.test_concepts_follow_sources import A, B, published, settled, source_versions
from steps.test_knowledge_source_notes import JUDGE_TURN, WRITER_TURN, add
from storage.models import KnowledgeEvent

if TYPE_CHECKING:
    from steps.conftest import Instance

NAME = "Online service providers"
DECIDE = "You maintain the concepts"
# Every note (one block, one evidenced claim, as WRITER_TURN writes it) founds or feeds the concept;
# the answer streams slowly, so that a write can be tried while the model works.
DECIDE_TURN = {"match": DECIDE, "piece_chars": 24, "delay": 0.05, "text": json.dumps({"decisions": [
    {"kind": "new_concept", "name": NAME, "module": "overview", "module_title": "Overview", "blocks": [1]}]})}
MODULE_TURN = {"match": "You write one module", "text": json.dumps({"points": [
    {"text": "{claim:1}", "ref": 1}, {"text": "{claim:2}", "ref": 2},
    {"text": "Every service provider must register with the Library of Congress by 1999.", "ref": 1}]})}
MODULE_JUDGE_TURN = {"match": "You check one module", "text": '{"ok": true, "problems": []}'}


def requests(log: Path, match: str) -> int:
    return sum(match in json.loads(line)["messages"][0]["content"] for line in log.read_text().splitlines())


def concept(instance: Instance, notebook_id: str) -> dict[str, Any]:
    base = f"/api/notebooks/{notebook_id}/knowledge/concepts"
    listed = [c for c in instance.call("GET", base).json["items"] if c["name"] == NAME]
    assert len(listed) == 1, instance.call("GET", base).json["items"]
    return instance.call("GET", f"{base}/{listed[0]['id']}").json


def test_a_model_decides_the_concepts_and_writes_their_modules_from_claims_with_pages(
    launch: Callable[..., Instance], fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    url, log = fake_server([WRITER_TURN, JUDGE_TURN, DECIDE_TURN, MODULE_TURN, MODULE_JUDGE_TURN])
    instance = launch(GNOSI_LLM_BASE_URL=url, GNOSI_LLM_MODEL="fake-model")
    instance.lab.vault.pdf_pages_record(A, "dmca.pdf", range(0, 9), title="The DMCA: titles I and II")
    instance.lab.vault.pdf_pages_record(B, "dmca.pdf", range(9, 18), title="The DMCA: titles III to V")
    notebook_id, job_id = instance.create_notebook([A, B])
    assert instance.wait_job_end(job_id).state == "succeeded"

    a = published(instance, notebook_id, A)
    decided_for_a = requests(log, DECIDE)
    response = add(instance, notebook_id, B)
    wait_for(lambda: requests(log, DECIDE) > decided_for_a and _running(instance), "the model to be deciding B's notes")
    instance.write(lambda session: None)  # BEGIN IMMEDIATE: waits for any write lock the event holds
    assert _running(instance), "a write had to wait until the event was done: the model worked holding the write lock"
    assert response.status_code == 202
    settled(instance)
    b = response.json["source"]["id"]

    versions = source_versions(instance, notebook_id)
    shown = concept(instance, notebook_id)
    assert shown["state"] == "active"
    fed = {c["source_version_id"] for c in shown["contributions"] if c["counts"]}
    assert fed == {versions[a], versions[b]}, "one concept, fed by both sources' notes"
    (module,) = shown["modules"]
    points = module["version"]["points"]
    claims = {(n["id"], claim["text"]) for n in _notes(instance, notebook_id) for claim in n["claims"]}
    assert len(points) == 2 and all((p["note_id"], p["text"]) in claims for p in points), "each point restates a claim"
    assert all(e["page"] and e["file_url"].endswith(f"#page={e['page']}") for p in points for e in p["evidence"])
    assert "Library of Congress" not in json.dumps(points), "the unsupported point was dropped"
    assert requests(log, DECIDE) >= 2 and requests(log, "You write one module") == requests(log, "You check one module") >= 2

    instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{b}")
    settled(instance)
    after = concept(instance, notebook_id)
    assert {c["source_version_id"] for c in after["contributions"] if c["counts"]} == {versions[a]}
    assert after["modules"][0]["version"]["id"] != module["version"]["id"] and after["state"] == "active"


def _running(instance: Instance) -> bool:
    return instance.read(lambda s: any(e.state == "running" for e in s.scalars(select(KnowledgeEvent))))


def _notes(instance: Instance, notebook_id: str) -> list[dict[str, Any]]:
    base = f"/api/notebooks/{notebook_id}/knowledge"
    found = []
    for source in instance.call("GET", f"{base}/sources").json["items"]:
        toc = instance.call("GET", f"{base}/source-notes/{source['active_version']['source_note_version_id']}").json["toc"]
        found += [instance.call("GET", f"{base}/notes/{entry['note_id']}").json for entry in toc]
    return found
