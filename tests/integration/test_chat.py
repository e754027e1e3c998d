"""Grounded chat over a real deployment: SSE and websocket, citations, refusals, forged context,
namespaces, shared-mode concurrency, deletion, and citations that survive a refresh."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from simple_websocket import Client

from support.held_server import held_page
from support.live import Deployment, deployment
from support.services import CORPUS
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

FACT_QUESTION = "What happens under the notice and takedown procedure?"


TORUS_PAGE = (
    "<html><head><title>Torus and sphere</title></head><body><h1>Torus and sphere</h1>"
    "<p>A torus is mapped onto a sphere by collapsing one of its circles: the mapping has degree one."
    " Every point of the sphere has a preimage on the torus.</p></body></html>"
)
JOB_ENDS = ("succeeded", "failed", "cancelled")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[tuple[Deployment, VaultBuilder, str]]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("chat")
    vault = VaultBuilder(tmp / "vault")
    for resource_id, pdf in (("dmca", "dmca.pdf"), ("geotopo", "GeoTopo-komprimiert.pdf"), ("trace", "tracemonkey.pdf")):
        vault.pdf_record(resource_id, pdf)
    with deployment(tmp, vault.root, vault.table_id, redis=False, GNOSI_NOTEBOOK_COMPLETED_REVISION_RETENTION="1") as d:
        d.start_web()
        notebook_id = d.api.create(["dmca", "geotopo", "trace"])
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        yield d, vault, notebook_id


@pytest.fixture(autouse=True)
def settings_restored(world) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """Each test finds the shared notebook private and in private mode, however the last one ended,
    so that every test passes alone and in any order."""
    yield
    d, _, notebook_id = world
    d.api.patch(f"/api/notebooks/{notebook_id}", {"visibility": "private", "conversation_mode": "private"})


def done_of(events: list[tuple[str, dict]]) -> dict:
    assert events and events[-1][0] == "done", events
    return events[-1][1]


def test_sse_answer_cites_the_page_that_holds_the_fact(world) -> None:
    d, _, notebook_id = world
    status, events = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION})
    assert status == 200
    kinds = [name for name, _ in events]
    assert kinds[0] == "tool" and "token" in kinds and "citation" in kinds
    done = done_of(events)
    assert done["status"] == "answered" and done["message_id"]
    cited = [c for c in done["citations"] if c["resource_id"] == "dmca"]
    assert cited and cited[0]["locator"]["page"] == 12
    evidence = d.api.get(f"/api/notebooks/{notebook_id}/evidence/{cited[0]['chunk_id']}", revision=cited[0]["revision_id"])
    assert evidence.status_code == 200
    assert "notice and takedown" in evidence.json()["text"] and cited[0]["quote"] in evidence.json()["text"]


def test_websocket_runs_the_same_turns(world) -> None:
    d, _, notebook_id = world
    base = str(d.api.http.base_url).rstrip("/").replace("http://", "ws://")
    ws = Client.connect(base + "/api/chat/ws")
    try:
        ws.send(json.dumps({"type": "auth", "token": d.token}))
        assert json.loads(ws.receive(timeout=10))["event"] == "auth"
        ws.send(json.dumps({"type": "turn", "notebook_id": notebook_id, "message": FACT_QUESTION}))
        events = []
        while not events or events[-1][0] not in ("done", "error"):
            message = json.loads(ws.receive(timeout=60))
            events.append((message["event"], message["data"]))
    finally:
        ws.close()
    _, sse_events = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION})
    assert [c["chunk_id"] for c in done_of(events)["citations"]] == [c["chunk_id"] for c in done_of(sse_events)["citations"]]
    assert done_of(events)["text"] == done_of(sse_events)["text"]


def test_a_question_the_sources_do_not_answer_is_refused(world) -> None:
    d, _, notebook_id = world
    _, events = d.api.chat({"notebook_id": notebook_id, "message": "What is the recipe for a Neapolitan pizza dough?"})
    done = done_of(events)
    assert done["status"] == "no_evidence" and done["citations"] == []


def test_a_refusal_lists_the_closest_passages_as_related(world) -> None:
    """The words overlap the DMCA summary, the answer is not in it: the refusal names where the
    notebook comes closest (the best passage of each document, best first), each opening like a
    citation, and the transcript keeps them."""
    d, _, notebook_id = world
    question = "How many euros is the fine for circumventing a technological measure in Germany?"
    _, events = d.api.chat({"notebook_id": notebook_id, "message": question})
    done = done_of(events)
    assert done["status"] == "no_evidence" and done["citations"] == []
    related = done["related"]
    assert 1 <= len(related) <= 3 and related[0]["resource_id"] == "dmca"
    assert len({passage["resource_id"] for passage in related}) == len(related)
    for passage in related:
        assert "quote" not in passage and passage["locator"].get("section") != "references"
        evidence = d.api.get(f"/api/notebooks/{notebook_id}/evidence/{passage['chunk_id']}", revision=passage["revision_id"])
        assert evidence.status_code == 200 and evidence.json()["cite"] == passage["cite"]
    assert "circumvent" in d.api.get(
        f"/api/notebooks/{notebook_id}/evidence/{related[0]['chunk_id']}", revision=related[0]["revision_id"]
    ).json()["text"].lower()
    stored = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    assert stored[-1]["id"] == done["message_id"] and stored[-1]["related"] == related
    answered = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION})[1]
    assert done_of(answered)["status"] == "answered" and done_of(answered)["related"] == []


def test_forged_context_is_ignored_or_rejected(world) -> None:
    d, _, notebook_id = world
    active = d.api.get(f"/api/notebooks/{notebook_id}").json()["active_revision"]["id"]
    status, events = d.api.chat({
        "notebook_id": notebook_id, "message": FACT_QUESTION, "revision_id": "forged", "principal": "user:someone",
        "thread_id": "forged", "namespace": "x",
    })
    assert status == 200 and {c["revision_id"] for c in done_of(events)["citations"]} == {active}
    for body, code in [
        ({"attachments": [{"name": "x.pdf"}]}, "CONTEXT_NOT_ALLOWED"),
        ({"mentions": ["@bob"]}, "CONTEXT_NOT_ALLOWED"),
        ({"skill_overrides": {"x": 1}}, "CONTEXT_NOT_ALLOWED"),
        ({"source_ids": ["not-a-source"]}, "SOURCE_NOT_ALLOWED"),
        ({"notebook_ids": [f"nb{i}" for i in range(16)]}, "TOO_MANY_CONTEXTS"),  # 17 with the page's
        ({"notebook_ids": [notebook_id, *(f"nb{i}" for i in range(15))]}, "CONTEXT_NOT_FOUND"),  # 16: counted, then checked
        ({"notebook_ids": ["unknown"]}, "CONTEXT_NOT_FOUND"),
    ]:
        status, events = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION, **body})
        assert status in (400, 404) and events[0][1]["code"] == code, (body, events)


def test_exact_source_selection_limits_the_evidence(world) -> None:
    d, _, notebook_id = world
    choices = d.api.get(f"/api/notebooks/{notebook_id}/chat-sources").json()
    assert choices["max_notebooks"] == 15  # the dashboard stops offering notebooks there
    sources = choices["sources"]
    geotopo = [s["id"] for s in sources if s["resource_id"] == "geotopo"]
    _, events = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION, "source_ids": geotopo})
    assert all(c["resource_id"] == "geotopo" for c in done_of(events)["citations"])


def test_viewers_read_but_cannot_send(world) -> None:
    d, _, notebook_id = world
    d.api.patch(f"/api/notebooks/{notebook_id}", {"visibility": "workspace"})
    viewer = d.user("vic", "viewer")
    status, events = viewer.chat({"notebook_id": notebook_id, "message": FACT_QUESTION})
    assert status == 403 and events[0][1]["code"] == "READ_ONLY"
    transcript = viewer.get(f"/api/notebooks/{notebook_id}/conversation").json()
    assert transcript["read_only"] is True


def test_shared_mode_serialises_concurrent_turns(world) -> None:
    d, _, notebook_id = world
    d.api.patch(f"/api/notebooks/{notebook_id}", {"visibility": "workspace", "conversation_mode": "shared"})
    bob = d.user("bob", "editor")
    questions = {"alice": "What does section 1201 prohibit?", "bob": "What is a Simplizialkomplex?"}
    clients = {"alice": d.api, "bob": bob}
    threads = [
        threading.Thread(target=clients[who].chat, args=({"notebook_id": notebook_id, "message": q},))
        for who, q in questions.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    messages = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    assert [m["role"] for m in messages[-4:]] == ["user", "assistant", "user", "assistant"]
    asked = {messages[-4]["author"]["name"], messages[-2]["author"]["name"]}
    assert asked == {"alice", "bob"}
    assert bob.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"] == messages
    cleared = bob.delete(f"/api/notebooks/{notebook_id}/conversation")
    assert cleared.status_code == 403


def test_switching_modes_restores_each_history(world) -> None:
    d, _, notebook_id = world
    d.api.patch(f"/api/notebooks/{notebook_id}", {"conversation_mode": "private"})
    private_before = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    d.api.patch(f"/api/notebooks/{notebook_id}", {"conversation_mode": "shared"})
    shared = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    d.api.chat({"notebook_id": notebook_id, "message": "Who is Martin Thoma?"})
    assert len(d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]) == len(shared) + 2
    d.api.patch(f"/api/notebooks/{notebook_id}", {"conversation_mode": "private"})
    assert d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"] == private_before


def test_citations_survive_a_refresh_that_changes_the_source(world) -> None:
    """On a notebook of its own, so that the shared one keeps citing the real DMCA summary."""
    d, vault, _ = world
    (vault.root / "files" / "changing.pdf").write_bytes((CORPUS / "pdf" / "dmca.pdf").read_bytes())
    vault.record("changing", "A summary that will change", file="files/changing.pdf")
    notebook_id = d.api.create(["changing"], title="Changing")
    assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    _, events = d.api.chat({"notebook_id": notebook_id, "message": FACT_QUESTION})
    citation = next(c for c in done_of(events)["citations"] if c["resource_id"] == "changing")
    (vault.root / "files" / "changing.pdf").write_bytes((CORPUS / "pdf" / "naacl06-shinyama.pdf").read_bytes())
    refresh = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
    assert refresh["ingest"] == "queued"
    detail = d.api.wait_for_job(notebook_id, job_id=refresh["job"]["id"])
    assert detail["active_revision"]["id"] != citation["revision_id"]
    evidence = d.api.get(f"/api/notebooks/{notebook_id}/evidence/{citation['chunk_id']}", revision=citation["revision_id"])
    assert evidence.status_code == 200 and "notice and takedown" in evidence.json()["text"]
    transcript = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    assert citation in transcript[-1]["citations"]


def test_deleting_a_notebook_leaves_no_conversation_rows_nor_attachment_copies_only_it_used(world) -> None:
    d, vault, _ = world
    vault.pdf_record("solo", "2023-06-20-PV.pdf")
    notebook_id = d.api.create(["trace", "solo"], title="Short-lived")
    d.api.wait_for_job(notebook_id)
    d.api.chat({"notebook_id": notebook_id, "message": "What is trace tree blacklisting?"})
    assert d.query("SELECT count(*) FROM conversation_threads WHERE notebook_id = ?", notebook_id) == [(1,)]
    copies = dict(d.query(
        "SELECT s.resource_id, s.content_hash FROM sources s JOIN revisions r ON r.id = s.revision_id "
        "WHERE r.notebook_id = ?", notebook_id,
    ))
    blobs = Path(d.env["LOCAL_DATA"]) / "blobs"
    assert all((blobs / digest[:2] / digest).is_file() for digest in copies.values())
    assert d.api.delete(f"/api/notebooks/{notebook_id}").status_code == 204
    assert not (blobs / copies["solo"][:2] / copies["solo"]).exists()
    assert (blobs / copies["trace"][:2] / copies["trace"]).is_file()  # the first notebook still cites it
    assert d.query("SELECT count(*) FROM conversation_threads WHERE notebook_id = ?", notebook_id) == [(0,)]
    assert d.query(
        "SELECT count(*) FROM messages m LEFT JOIN conversation_threads t ON t.id = m.thread_id WHERE t.id IS NULL"
    ) == [(0,)]
    assert d.query("SELECT count(*) FROM revisions WHERE notebook_id = ?", notebook_id) == [(0,)]
    assert (Path(d.env["GNOSI_VAULT_PATH"]) / "files" / "tracemonkey.pdf").exists()


def test_cancelling_the_first_ingestion_blocks_chat_until_a_refresh_succeeds(world) -> None:
    d, vault, _ = world
    with held_page(TORUS_PAGE) as (url, released):
        vault.record("held", "A page that answers late", link=url)
        notebook_id = d.api.create(["held"], title="Not yet")
        # The job cannot end before its page is answered, so the cancel lands on a running job.
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh/cancel").status_code == 202
        released.set()
        assert d.api.wait_until(notebook_id, lambda nb: nb["job"]["state"] in JOB_ENDS)["job"]["state"] == "cancelled"
        status, events = d.api.chat({"notebook_id": notebook_id, "message": "Torus?"})
        assert status == 409 and events[0][1]["code"] == "NOTEBOOK_NOT_READY"
        assert "cancelled" in events[0][1]["message"]
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        status, events = d.api.chat({"notebook_id": notebook_id, "message": "How is a torus mapped onto a sphere?"})
    assert status == 200 and done_of(events)["status"] == "answered"
