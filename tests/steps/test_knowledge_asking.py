"""Asking and editing the knowledge through the real API and a real Celery worker (issue #20 items
5 and 6): a scoped question searches one source version's notes only and cites its pages; a
global one takes notes and concepts in turns; a source deleted between the search and the answer
withdraws the answer (``SOURCE_CHANGED``); a person's edit and the agent's approved edit take one
path, refuse a stale ``expected_version_id``, and give ``UNCHANGED`` for the same text."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sqlalchemy import select

from app.services import knowledge_answers, knowledge_concepts
from pipeline.answering.llm import OpenAICompatibleEngine
from pipeline.extractors import extract
from steps.conftest import wait_for
from steps.test_concepts_follow_sources import A, B, pair, published, settled  # noqa: F401 (the fixture)
from steps.test_knowledge_source_notes import squashed
from storage.models import KnowledgeContribution, KnowledgeEvent, KnowledgeNoteVersion
from support.signed_in import signed_in
from support.sse import parse_sse
from tasks.knowledge import event as process_event

if TYPE_CHECKING:
    from steps.conftest import Instance

QUESTION = "Which service providers does the DMCA limit the liability of for transmitting material?"


@pytest.fixture
def both(pair: tuple[Instance, str]) -> tuple[Instance, str, dict[str, str]]:  # noqa: F811 (pytest's fixture)
    """Both halves published, their concepts settled; the source id of each."""
    instance, notebook_id = pair
    return instance, notebook_id, {A: published(instance, notebook_id, A), B: published(instance, notebook_id, B)}


def ask(instance: Instance, notebook_id: str, question: str = QUESTION, **body: Any) -> Any:
    return instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/ask", json={"question": question, **body})


def active_version(instance: Instance, notebook_id: str, source_id: str) -> dict[str, Any]:
    return instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources/{source_id}").json["active_version"]


def page_texts(instance: Instance, file_path: str) -> dict[int, str]:
    """A part's pages as the extractor reads the file the notebook holds."""
    data = (instance.lab.vault.root / file_path).read_bytes()
    pages: dict[int, str] = {}
    for segment in extract(data, filename="part.pdf").segments:
        pages[segment.locator["page"]] = pages.get(segment.locator["page"], "") + "\n" + segment.text
    return pages


def test_a_scoped_question_reads_only_its_source_and_cites_its_pages(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, ids = both
    first = active_version(instance, notebook_id, ids[A])
    answered = ask(instance, notebook_id, source_version_id=first["id"])
    assert answered.status_code == 200, answered.json
    shown = answered.json
    assert shown["status"] == "answered" and shown["citations"], shown
    assert {hit["kind"] for hit in shown["hits"]} == {"note"}
    pages = page_texts(instance, "files/dmca-p1-9.pdf")
    for citation in shown["citations"]:
        assert citation["source_version_id"] == first["id"]
        assert squashed(citation["quote"]) in squashed(pages[citation["locator"]["page"]]), citation
        assert citation["file_url"].endswith(f"#page={citation['locator']['page']}")
        assert citation["quote"] in shown["answer"]
    found = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/search",
                          query_string={"q": "service provider", "source_version_id": first["id"]}).json["items"]
    assert found and all(hit["kind"] == "note" for hit in found)


def test_a_global_question_takes_notes_and_concepts_in_turns(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, _ = both
    hits = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/search", query_string={"q": "service provider"}).json["items"]
    kinds = [hit["kind"] for hit in hits]
    assert kinds[:2] == ["note", "concept"], kinds
    assert any(hit["title"].lower().startswith("service provider") for hit in hits if hit["kind"] == "concept")
    shown = ask(instance, notebook_id).json
    assert shown["status"] == "answered" and {c["kind"] for c in shown["citations"]} <= {"note", "concept"}


def test_a_source_deleted_between_search_and_answer_withdraws_the_answer(
    both: tuple[Instance, str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance, notebook_id, ids = both
    real = knowledge_answers.compose

    def deleting_first(question: str, hits: list[Any]) -> Any:
        composed = real(question, hits)  # the answer is written from the hits read before the deletion
        instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{ids[A]}")
        return composed

    monkeypatch.setattr(knowledge_answers, "compose", deleting_first)
    refused = ask(instance, notebook_id)
    assert refused.status_code == 409 and refused.json["code"] == "SOURCE_CHANGED", refused.json
    monkeypatch.setattr(knowledge_answers, "compose", real)
    settled(instance)
    deleted_version = active_version(instance, notebook_id, ids[A])["id"]
    again = ask(instance, notebook_id).json
    assert all(c["source_version_id"] != deleted_version for c in again["citations"]), again
    scoped = ask(instance, notebook_id, source_version_id=deleted_version)
    assert scoped.status_code == 409 and scoped.json["code"] == "SOURCE_CHANGED"


def test_asking_refuses_what_it_cannot_read(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, _ = both
    assert ask(instance, notebook_id, source_version_id="0" * 32).json["code"] == "KNOWLEDGE_SOURCE_VERSION_NOT_FOUND"
    assert ask(instance, notebook_id, question="   ").json["code"] == "FIELD_INVALID"
    assert ask(instance, notebook_id, limit=0).json["code"] == "FIELD_INVALID"
    assert ask(instance, notebook_id, scope="x").json["code"] == "FIELD_UNKNOWN"
    assert ask(instance, "0" * 32).json["code"] == "NOTEBOOK_NOT_FOUND"
    nothing = ask(instance, notebook_id, question="Which grapes grow best on volcanic soil in Sicily?").json
    assert nothing["status"] == "no_evidence" and nothing["citations"] == []


def _first_note(instance: Instance, notebook_id: str, source_id: str) -> dict[str, Any]:
    """The first note of the source's note that has a block with a claim, and that block's key."""
    snapshot = active_version(instance, notebook_id, source_id)["source_note_version_id"]
    toc = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{snapshot}").json["toc"]
    for entry in toc:
        note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{entry['note_id']}").json
        claimed = [b["key"] for b in note["blocks"] if any(c["block_key"] == b["key"] for c in note["claims"])]
        if claimed and len(note["claims"]) > len([c for c in note["claims"] if c["block_key"] == claimed[0]]):
            return {**note, "edited_block": claimed[0], "snapshot": snapshot}
    raise AssertionError("no note with claims in two blocks")


def edit(instance: Instance, notebook_id: str, note_id: str, block_key: str, expected: str, text: str) -> Any:
    return instance.call("PATCH", f"/api/notebooks/{notebook_id}/knowledge/notes/{note_id}/blocks/{block_key}",
                         json={"expected_version_id": expected, "text": text})


def test_a_person_edits_a_block_into_a_new_version_that_keeps_the_rest(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, ids = both
    note = _first_note(instance, notebook_id, ids[A])
    block, before = note["edited_block"], note["version"]["id"]
    text = "Plainly put: a provider that only carries other people's traffic is not liable for it."
    edited = edit(instance, notebook_id, note["id"], block, before, text)
    assert edited.status_code == 200 and edited.json["status"] == "UPDATED", edited.json
    after = edited.json["note"]
    assert after["version"]["number"] == 2 and after["version"]["author"].startswith("user:")
    rewritten = next(b for b in after["blocks"] if b["key"] == block)
    assert rewritten["text"] == text and rewritten["human_revised"] is True
    assert not [c for c in after["claims"] if c["block_key"] == block], "the rewritten block's claims are unbound"
    kept = [e for e in note["evidence"] if e["block_key"] != block]
    assert [(e["claim_key"], e["snippet"]) for e in after["evidence"]] == [(e["claim_key"], e["snippet"]) for e in kept]
    snapshot = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{edited.json['source_note_version_id']}").json
    assert snapshot["current"] and after["version"]["id"] in {e["note_version_id"] for e in snapshot["toc"]}
    old = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/source-notes/{note['snapshot']}").json
    assert before in {e["note_version_id"] for e in old["toc"]} and not old["current"], "the old snapshot stays as it was"
    found = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/search", query_string={"q": "traffic liable"}).json["items"]
    assert found and found[0]["id"] == note["id"] and found[0]["version_id"] == after["version"]["id"]

    same = edit(instance, notebook_id, note["id"], block, after["version"]["id"], text)
    assert same.status_code == 200 and same.json["status"] == "UNCHANGED"
    assert same.json["note"]["version"]["id"] == after["version"]["id"]
    stale = edit(instance, notebook_id, note["id"], block, before, "Another text.")
    assert stale.status_code == 409 and stale.json["code"] == "VERSION_CONFLICT"
    assert stale.json["current_version_id"] == after["version"]["id"]
    missing = edit(instance, notebook_id, note["id"], "b999", after["version"]["id"], "Text.")
    assert missing.status_code == 404 and missing.json["code"] == "BLOCK_NOT_FOUND"
    versions = instance.read(lambda s: s.query(KnowledgeNoteVersion).filter_by(note_id=note["id"]).count())
    assert versions == 2

    settled(instance)  # the concepts followed: the note's first version feeds nothing any more
    old_fed = instance.read(lambda s: s.query(KnowledgeContribution).filter_by(note_version_id=before, state="valid").count())
    assert old_fed == 0


def test_the_agent_edits_only_with_a_one_time_approval_on_the_same_path(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, ids = both
    note = _first_note(instance, notebook_id, ids[B])
    block, current = note["edited_block"], note["version"]["id"]
    base = f"/api/notebooks/{notebook_id}/knowledge/approvals"
    person = signed_in(instance.app, instance.lab.tokens["alice"])

    def request(expected: str, text: str) -> str:
        params = {"note_id": note["id"], "expected_version_id": expected, "block_key": block, "text": text}
        made = instance.call("POST", base, json={"action": "edit_block", "params": params})
        assert made.status_code == 201 and made.json["used_at"] is None, made.json
        return made.json["id"]

    edit(instance, notebook_id, note["id"], block, current, "A person changed this block first.")
    stale = request(current, "The agent's wording, from a version that is no longer current.")
    refused = person("POST", f"{base}/{stale}/approve")
    assert refused.status_code == 409 and refused.json["code"] == "VERSION_CONFLICT"
    again = person("POST", f"{base}/{stale}/approve")
    assert again.status_code == 409 and again.json["code"] == "APPROVAL_USED", "an approval is used once, refused or not"

    latest = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{note['id']}").json["version"]["id"]
    same = person("POST", f"{base}/{request(latest, 'A person changed this block first.')}/approve")
    assert same.status_code == 200 and same.json["status"] == "UNCHANGED"
    approved = person("POST", f"{base}/{request(latest, 'The agent made this block clearer.')}/approve")
    assert approved.status_code == 200 and approved.json["status"] == "UPDATED"
    assert approved.json["note"]["version"]["author"].startswith("agent:") and approved.json["note"]["version"]["number"] == 3

    bad = instance.call("POST", base, json={"action": "delete_note", "params": {}})
    assert bad.status_code == 400 and bad.json["code"] == "FIELD_INVALID"
    extra = instance.call("POST", base, json={"action": "edit_block", "params": {"note_id": note["id"]}})
    assert extra.status_code == 400 and extra.json["field"] == "params"
    assert person("POST", f"{base}/{'0' * 48}/approve").json["code"] == "APPROVAL_NOT_FOUND"


def test_an_edit_event_arriving_late_leaves_the_current_version_feeding(both: tuple[Instance, str, dict[str, str]]) -> None:
    """Review finding: an older edit's event resent after a newer one ran withdrew the current
    version's contributions (it followed its own version, not the note's)."""
    instance, notebook_id, _ = both
    feeding = instance.read(lambda s: list(s.scalars(select(KnowledgeContribution).where(KnowledgeContribution.state == "valid"))))
    for contribution in feeding:
        note = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/notes/{contribution.note_id}").json
        spare = [b["key"] for b in note["blocks"] if b["key"] not in contribution.block_keys]
        if spare:
            break
    else:
        raise AssertionError("no feeding note with a block it does not feed from")
    second = edit(instance, notebook_id, note["id"], spare[0], note["version"]["id"], "A first rewording.").json
    third = edit(instance, notebook_id, note["id"], spare[0], second["note"]["version"]["id"], "A second rewording.").json
    settled(instance)
    current = third["note"]["version"]["id"]

    def fed(session: Any) -> int:
        return len(list(session.scalars(select(KnowledgeContribution).where(
            KnowledgeContribution.note_version_id == current, KnowledgeContribution.state == "valid"))))

    assert instance.read(fed) >= 1, "the current version feeds its concept"
    late = instance.read(lambda s: s.scalar(select(KnowledgeEvent).where(KnowledgeEvent.idempotency_key == f"note_edited:{second['note']['version']['id']}")))
    instance.write(lambda s: setattr(s.get(KnowledgeEvent, late.id), "state", "queued"))  # as a resend after the newer one ran
    assert process_event(late.id) == "done"
    assert instance.read(fed) >= 1, "the late event withdrew the current version's contributions"


def test_an_event_that_fails_says_why(both: tuple[Instance, str, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: the claim rolled back with the failed work, so the event stayed queued
    with no reason."""
    instance, notebook_id, ids = both

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the concept store is broken")

    monkeypatch.setattr(knowledge_concepts, "process", broken)
    instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{ids[B]}")
    key = f"source_deleted:{ids[B]}:"
    failed = wait_for(lambda: instance.read(lambda s: next((e for e in s.scalars(select(KnowledgeEvent))
                                                            if e.idempotency_key.startswith(key) and e.state == "failed"), None)),
                      "the event to fail")
    assert "the concept store is broken" in failed.error


def test_a_person_and_the_agent_edit_under_one_rule_for_text(both: tuple[Instance, str, dict[str, str]]) -> None:
    """Review finding: a person could not write a block of several lines, while the agent's
    approval took control characters a person's edit refused."""
    instance, notebook_id, ids = both
    note = _first_note(instance, notebook_id, ids[A])
    lines = "The Act limits liability:\n- for transmitting,\n- for caching."
    edited = edit(instance, notebook_id, note["id"], note["edited_block"], note["version"]["id"], lines)
    assert edited.status_code == 200 and next(b for b in edited.json["note"]["blocks"] if b["key"] == note["edited_block"])["text"] == lines
    params = {"note_id": note["id"], "expected_version_id": edited.json["note"]["version"]["id"],
              "block_key": note["edited_block"], "text": "Hidden \u202e reversed"}
    refused = instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/approvals", json={"action": "edit_block", "params": params})
    assert refused.status_code == 400 and refused.json["field"] == "params.text"
    person = edit(instance, notebook_id, note["id"], note["edited_block"], params["expected_version_id"], "NUL \x00 here")
    assert person.status_code == 400 and person.json["field"] == "text"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}


def _chat(instance: Instance, notebook_id: str, message: str, mode: str) -> list[tuple[str, Any]]:
    response = instance.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": message, "mode": mode})
    assert response.status_code == 200, response.get_data(as_text=True)
    return parse_sse(response.get_data(as_text=True))


def _request(log: Path, number: int) -> dict[str, Any]:
    return json.loads(log.read_text().splitlines()[number])


def _tool_results(log: Path, number: int) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in _request(log, number)["messages"] if m["role"] == "tool"]


def test_a_knowledge_mode_turn_without_a_model_quotes_the_notes_passages(both: tuple[Instance, str, dict[str, str]]) -> None:
    instance, notebook_id, _ = both

    found = _chat(instance, notebook_id, QUESTION, "knowledge")

    searched = [data["name"] for event, data in found if event == "tool" and data["state"] == "done"]
    done = found[-1][1]
    assert searched == ["search_knowledge"] and done["status"] == "answered", found
    for cited in done["citations"]:
        assert cited["chunk_id"].startswith("ch_kb"), "a quote of a note's passage, not of a chunk"
        pages = page_texts(instance, f"files/{cited['title']}")
        assert squashed(cited["quote"]) in squashed(pages[cited["locator"]["page"]]), cited
        assert cited["open_url"].endswith(f"#page={cited['locator']['page']}")


def test_the_chat_agent_reads_knowledge_freely_and_writes_only_with_the_persons_approval(
    both: tuple[Instance, str, dict[str, str]], fake_server: Callable[[list[dict]], tuple[str, Path]],
) -> None:
    instance, notebook_id, ids = both
    note = _first_note(instance, notebook_id, ids[A])
    block, before = note["edited_block"], note["version"]["id"]
    clearer = "A provider that only passes other people's material along is not liable for it."
    url, log = fake_server([
        _call("search_knowledge", query="service provider liability"),
        {"text": "The notes say: {chunk_sentence:0} [{chunk:0}]"},
        _call("read_note", note_id=note["id"]),
        _call("propose_block_edit", note_id=note["id"], expected_version_id="{result:version_id}", block_key=block, text=clearer),
        {"text": "I asked you to approve the clearer wording."},
        _call("read_note", note_id=note["id"]),
        {"tool_calls": [
            {"name": "propose_block_edit", "arguments": json.dumps({"note_id": note["id"], "expected_version_id": before,
                                                                    "block_key": block, "text": "From a stale read."})},
            {"name": "propose_block_edit", "arguments": json.dumps({"note_id": note["id"], "expected_version_id": "{result:version_id}",
                                                                    "block_key": block, "text": clearer})},
        ]},
        {"text": "Nothing to change."},
        _call("propose_block_edit", note_id=note["id"], expected_version_id=before, block_key=block, text=clearer),
        {"text": "Plain chat cannot edit notes."},
    ])
    instance.app.extensions["gnosi"].__dict__["answer_engine"] = OpenAICompatibleEngine(url, "fake-model")

    found = _chat(instance, notebook_id, "What do my notes say about service providers?", "knowledge")
    done = found[-1][1]
    assert found[-1][0] == "done" and done["status"] == "answered" and done["approvals"] == [], done
    cited = done["citations"][0]
    assert cited["chunk_id"].startswith("ch_kb") and cited["knowledge"]["source_version_id"]
    pages = page_texts(instance, "files/dmca-p1-9.pdf")
    assert squashed(cited["quote"]) in squashed(pages[cited["locator"]["page"]]), cited
    assert cited["open_url"].endswith(f"#page={cited['locator']['page']}") and cited["evidence"]["text"]

    proposed = _chat(instance, notebook_id, "Make that block clearer.", "knowledge")
    approvals = [data for event, data in proposed if event == "approval"]
    assert len(approvals) == 1 and proposed[-1][1]["approvals"] == approvals, proposed
    approval = approvals[0]
    assert approval["params"] == {"note_id": note["id"], "expected_version_id": before, "block_key": block, "text": clearer}
    assert _tool_results(log, 4)[-1] == {"status": "awaiting_approval", "approval_id": approval["id"],
                                         "expires_at": approval["expires_at"], "note_id": note["id"], "block_key": block}
    base = f"/api/notebooks/{notebook_id}/knowledge"
    assert instance.call("GET", f"{base}/notes/{note['id']}").json["version"]["id"] == before, "proposing wrote nothing"
    assert [a["id"] for a in instance.call("GET", f"{base}/approvals").json["items"]] == [approval["id"]]

    by_token = instance.call("POST", approval["approve_url"])
    assert by_token.status_code == 403 and by_token.json["code"] == "SIGN_IN_REQUIRED", "the agent's own credential cannot approve"
    approved = signed_in(instance.app, instance.lab.tokens["alice"])("POST", approval["approve_url"])
    assert approved.status_code == 200 and approved.json["status"] == "UPDATED", approved.get_json()
    after = approved.json["note"]
    assert after["version"]["author"].startswith("agent:") and next(b for b in after["blocks"] if b["key"] == block)["text"] == clearer
    assert instance.call("GET", f"{base}/approvals").json["items"] == []

    _chat(instance, notebook_id, "Try both again.", "knowledge")
    stale, same = _tool_results(log, 7)[-2:]
    assert stale["error"]["code"] == "VERSION_CONFLICT", stale
    assert same == {"status": "UNCHANGED", "note_id": note["id"], "version_id": after["version"]["id"]}, same

    plain = _chat(instance, notebook_id, "Edit the note.", "notebook")
    assert plain[-1][1]["approvals"] == []
    offered = {tool["function"]["name"] for tool in _request(log, 8)["tools"]}
    assert "search_notebook" in offered and not offered & {"search_knowledge", "read_note", "propose_block_edit"}, offered
    assert _tool_results(log, 9)[-1]["error"]["code"] == "TOOL_UNKNOWN"
    assert instance.read(lambda s: s.query(KnowledgeNoteVersion).filter_by(note_id=note["id"]).count()) == 2
