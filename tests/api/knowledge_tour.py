"""The knowledge layer in the API tour (app/api/knowledge.py, app/api/knowledge_concepts.py): two
PDFs on one subject (the halves of dmca.pdf) made source notes, their concepts, search and
answers, trees, edits and the agent's approvals, jobs cancelled and restarted, sources deleted and
restored; and the errors a caller can cause.

No worker consumes messages in this test world, so the notebook's first revision is completed here
as the pipeline would (each PDF extracted for real, its extraction cached where the parse stage
reads it), and while the tour runs Celery runs every message the knowledge routes send at once, in
the request that sends it (``inline_tasks``): a job has ended, and its concepts followed it, when
the request that started it answers."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from storage.models import KnowledgeApproval, utcnow
from support.signed_in import signed_in
from support_api import index, services_of

# Two documents on one subject, each saying "service provider" and "copyright owner" where the
# other does: their notes found shared concepts (tests/steps/test_concepts_follow_sources.py).
A, B = "dmca-first", "dmca-second"
ENDED = ("completed", "completed_with_warnings")
QUESTION = "Which service providers does the DMCA limit the liability of for transmitting material?"


def knowledge_notebook(world: Any, contract: Any) -> str:
    """A notebook of the two halves of dmca.pdf, its first revision active."""
    world.vault.pdf_pages_record(A, "dmca.pdf", range(0, 9), title="The DMCA: titles I and II")
    world.vault.pdf_pages_record(B, "dmca.pdf", range(9, 18), title="The DMCA: titles III to V")
    notebook_id = contract.check(world.call("POST", "/api/notebooks", json={
        "title": "Knowledge", "visibility": "workspace", "resource_ids": [A, B],
    }), 201).json["id"]
    index(world, notebook_id, {A: "dmca-p1-9.pdf", B: "dmca-p10-18.pdf"})
    return notebook_id


@contextmanager
def inline_tasks(world: Any) -> Iterator[None]:
    """Celery runs each message at once, in the process (and the request) that sends it, and a
    task's failure fails that request."""
    conf = world.app.extensions["celery"].conf
    conf.task_always_eager, conf.task_eager_propagates = True, True
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = False, False


def knowledge_tour(world: Any, contract: Any, notebook_id: str) -> None:
    """Every route of the knowledge layer, each with a success."""
    call, check = world.call, contract.check
    person = signed_in(world.app, world.tokens["alice"])
    base = f"/api/notebooks/{notebook_id}/knowledge"
    with inline_tasks(world):
        # Sources and their jobs: A made a source note, A again a duplicate, then B.
        added = check(call("POST", f"{base}/sources", json={"resource_id": A}), 202).json
        job_id, source_a = added["version"]["job"]["id"], added["source"]["id"]
        assert check(call("GET", f"{base}/jobs/{job_id}"), 200).json["state"] in ENDED
        again = check(call("POST", f"{base}/sources", json={"resource_id": A}), 200).json
        assert again["duplicate"] and again["version"]["id"] == added["version"]["id"], again
        added_b = check(call("POST", f"{base}/sources", json={"resource_id": B}), 202).json
        source_b = added_b["source"]["id"]
        listed = check(call("GET", f"{base}/sources"), 200).json["items"]
        assert [s["id"] for s in listed] == [source_a, source_b], listed
        paged = check(call("GET", f"{base}/sources?per_page=1&page=2"), 200).json
        assert ([s["id"] for s in paged["items"]], paged["total"]) == ([source_b], 2), paged
        check(call("GET", f"{base}/sources?per_page=201"), 400, "PAGE_SIZE_TOO_LARGE")
        jobs_page = check(call("GET", f"{base}/jobs?per_page=1"), 200).json
        assert len(jobs_page["items"]) == 1 and jobs_page["total"] >= 2, jobs_page
        # Run A's job again from its publish stage: a new source note, the stages before it kept.
        restarted = check(call("POST", f"{base}/jobs/{job_id}/restart", json={"stage": "publish"}), 202).json
        assert restarted["stage"] == "publish", restarted
        version = check(call("GET", f"{base}/sources/{source_a}"), 200).json["versions"][0]
        assert version["job"]["state"] in ENDED, version
        # The source note, its Markdown, a note at its versions.
        source_note = check(call("GET", f"{base}/source-notes/{version['source_note_version_id']}"), 200).json
        assert source_note["current"] and source_note["toc"], source_note
        markdown = check(call("GET", source_note["markdown_url"]), 200)
        assert markdown.mimetype == "text/markdown" and source_note["toc"][0]["title"] in markdown.get_data(as_text=True)
        entry = next(e for e in source_note["toc"] if read_note(world, contract, base, e["note_id"])["claims"])
        note = check(call("GET", f"{base}/notes/{entry['note_id']}?version={entry['note_version_id']}"), 200).json
        assert note["evidence"] and all(e["file_url"].endswith(f"#page={e['page']}") for e in note["evidence"])
        # Search and ask.
        hits = check(call("GET", f"{base}/search?q=service+provider&limit=5"), 200).json["items"]
        assert hits, "the notes say 'service provider'"
        answer = check(call("POST", f"{base}/ask", json={"question": QUESTION}), 200).json
        assert answer["status"] == "answered" and answer["citations"], answer
        # Concepts (two sources share terms), the events they followed, a tree showing one.
        listed_concepts = check(call("GET", f"{base}/concepts"), 200).json
        concepts = listed_concepts["items"]
        assert listed_concepts["total"] == len(concepts) >= 1, listed_concepts
        assert check(call("GET", f"{base}/concepts?per_page=1&page=999"), 200).json["items"] == []
        shared = next(c for c in concepts if c["state"] == "active" and c["source_version_count"] == 2)
        concept = check(call("GET", f"{base}/concepts/{shared['id']}"), 200).json
        assert concept["contributions"] and concept["versions"], concept
        events_page = check(call("GET", f"{base}/events?per_page=10"), 200).json
        events = events_page["items"]
        assert events_page["total"] == len(events), events_page
        assert {e["kind"] for e in events} == {"note_published"} and all(e["state"] == "done" for e in events), events
        nodes = [{"key": "law", "parent": None, "kind": "group", "title": "Copyright law"},
                 {"key": "c1", "parent": "law", "kind": "concept", "concept_id": shared["id"]}]
        tree = check(call("POST", f"{base}/trees", json={"title": "The DMCA", "nodes": nodes}), 201).json
        assert tree["nodes"][1]["concept_version_id"] == concept["active_version"]["id"], tree
        assert [t["id"] for t in check(call("GET", f"{base}/trees"), 200).json["items"]] == [tree["id"]]
        check(call("GET", f"{base}/trees/{tree['id']}"), 200)
        moved = check(call("PUT", f"{base}/trees/{tree['id']}", json={
            "expected_version_id": tree["version"]["id"], "nodes": nodes[:1],
        }), 200).json
        assert moved["version"]["number"] == 2 and len(moved["nodes"]) == 1, moved
        # A person's edit of a block, the agent's through an approval, a note deleted.
        block = note["blocks"][0]
        edited = check(call("PATCH", f"{base}/notes/{note['id']}/blocks/{block['key']}", json={
            "expected_version_id": note["version"]["id"], "text": "A block a person rewrote.",
        }), 200).json
        assert edited["status"] == "UPDATED" and edited["note"]["blocks"][0]["human_revised"], edited
        approval = check(call("POST", f"{base}/approvals", json={"action": "edit_block", "params": {
            "note_id": note["id"], "expected_version_id": edited["note"]["version"]["id"], "block_key": block["key"],
            "text": "A block the agent rewrote.",
        }}), 201).json
        assert check(call("GET", f"{base}/approvals/{approval['id']}"), 200).json["used_at"] is None
        pending = check(call("GET", f"{base}/approvals"), 200).json["items"]
        assert [(a["id"], a["note_title"], a["before"]) for a in pending] == [
            (approval["id"], edited["note"]["title"], "A block a person rewrote.")], pending
        check(call("POST", f"{base}/approvals/{approval['id']}/approve"), 403, "SIGN_IN_REQUIRED")
        approved = check(person("POST", f"{base}/approvals/{approval['id']}/approve"), 200).json
        assert approved["note"]["version"]["author"].startswith("agent:"), approved
        deleted = check(call("DELETE", f"{base}/notes/{note['id']}"), 200).json
        assert deleted["note"]["state"] == "deleted" and deleted["source_note_version_id"], deleted
        # A new version of A asked for and its job cancelled; B deleted and restored.
        forced = check(call("POST", f"{base}/sources", json={"resource_id": A, "new_version": True}), 202).json
        assert forced["version"]["number"] == 2, forced
    check(call("POST", f"{base}/sources", json={"resource_id": A, "new_version": True}), 202)  # queued: no worker now
    queued = check(call("GET", f"{base}/sources/{source_a}"), 200).json["active_version"]["job"]
    assert check(call("POST", f"{base}/jobs/{queued['id']}/cancel"), 200).json["state"] == "cancelled"
    with inline_tasks(world):
        assert check(call("DELETE", f"{base}/sources/{source_b}"), 200).json["state"] == "deleted"
        assert check(call("POST", f"{base}/sources/{source_b}/restore"), 200).json["state"] == "active"
        kinds = [e["kind"] for e in check(call("GET", f"{base}/events"), 200).json["items"]]
        assert kinds[:2] == ["source_restored", "source_deleted"], kinds
    older = next(e for e in source_note["toc"] if e["note_id"] != note["id"])  # a note of A's first version
    knowledge_errors(world, contract, notebook_id, job_id=job_id, note=note, source_b=source_b, older=older)


def read_note(world: Any, contract: Any, base: str, note_id: str) -> dict[str, Any]:
    return contract.check(world.call("GET", f"{base}/notes/{note_id}"), 200).json


def knowledge_errors(world: Any, contract: Any, notebook_id: str, *, job_id: str, note: dict[str, Any], source_b: str,
                     older: dict[str, Any]) -> None:
    """What a caller can get wrong with knowledge it has: each its documented code."""
    call, check = world.call, contract.check
    base = f"/api/notebooks/{notebook_id}/knowledge"
    stale = {"expected_version_id": note["version"]["id"], "text": "Too late."}
    check(call("POST", f"{base}/jobs/{job_id}/restart", json={"stage": "check"}), 409, "SOURCE_CHANGED")
    current = check(call("GET", f"{base}/sources/{source_b}"), 200).json["active_version"]
    other = check(call("GET", f"{base}/source-notes/{current['source_note_version_id']}"), 200).json["toc"][0]
    editable = read_note(world, contract, base, other["note_id"])
    check(call("PATCH", f"{base}/notes/{other['note_id']}/blocks/b1", json=stale), 409, "VERSION_CONFLICT")
    check(call("PATCH", f"{base}/notes/{other['note_id']}/blocks/nope", json={
        "expected_version_id": editable["version"]["id"], "text": "x"}), 404, "BLOCK_NOT_FOUND")
    check(call("PATCH", f"{base}/notes/{note['id']}/blocks/b1", json=stale), 409, "NOTE_DELETED")
    check(call("PATCH", f"{base}/notes/{older['note_id']}/blocks/b1", json={
        "expected_version_id": older["note_version_id"], "text": "Too late."}), 409, "SOURCE_CHANGED")
    check(call("GET", f"{base}/notes/{note['id']}?version=nope"), 404, "NOTE_VERSION_NOT_FOUND")
    check(call("GET", f"{base}/search?q=copyright&source_version_id=nope"), 404, "KNOWLEDGE_SOURCE_VERSION_NOT_FOUND")
    check(call("GET", f"{base}/search?q=copyright&limit=many"), 400, "BAD_LIMIT")
    check(call("GET", f"{base}/search?q=copyright&limit=99"), 400, "BAD_LIMIT")
    check(call("GET", f"{base}/search?q=copyright&source_version_id={note['source_version_id']}"), 409, "SOURCE_CHANGED")
    params = {"note_id": other["note_id"], "expected_version_id": editable["version"]["id"], "block_key": "b1", "text": "x"}
    approval = check(call("POST", f"{base}/approvals", json={"action": "edit_block", "params": params}), 201).json
    check(call("GET", f"{base}/approvals/{approval['id']}", who="bob"), 404, "APPROVAL_NOT_FOUND")
    person = signed_in(world.app, world.tokens["alice"])
    check(person("POST", f"{base}/approvals/{approval['id']}/approve"), 200)
    check(person("POST", f"{base}/approvals/{approval['id']}/approve"), 409, "APPROVAL_USED")
    late = check(call("POST", f"{base}/approvals", json={"action": "edit_block", "params": params}), 201).json
    with services_of(world).db.session() as session:
        session.get(KnowledgeApproval, late["id"]).expires_at = utcnow() - timedelta(seconds=1)
    check(person("POST", f"{base}/approvals/{late['id']}/approve"), 410, "APPROVAL_EXPIRED")
    declined = check(call("POST", f"{base}/approvals", json={"action": "edit_block", "params": params}), 201).json
    check(call("DELETE", f"{base}/approvals/{declined['id']}"), 403, "SIGN_IN_REQUIRED")
    check(person("DELETE", f"{base}/approvals/{declined['id']}"), 204)
    check(person("POST", f"{base}/approvals/{declined['id']}/approve"), 404, "APPROVAL_NOT_FOUND")
    check(person("DELETE", f"{base}/approvals/{approval['id']}"), 409, "APPROVAL_USED")
    check(call("POST", f"{base}/approvals", json={"action": "delete_note", "params": params}), 400, "FIELD_INVALID")
    check(call("POST", f"{base}/approvals", json={"action": "edit_block", "params": {"note_id": "x"}}), 400, "FIELD_INVALID")
    check(call("POST", f"{base}/approvals", json={"params": params}), 400, "FIELD_REQUIRED")
    check(call("POST", f"{base}/sources", json={"resource_id": "dmca"}), 404, "RESOURCE_NOT_IN_NOTEBOOK")
    check(call("POST", f"{base}/sources", json={"resource_id": A, "source_id": "nope"}), 404, "SOURCE_NOT_FOUND")
    check(call("POST", f"{base}/sources", json={"resource_id": A}, who="vic"), 403, "READ_ONLY")
    check(call("POST", f"{base}/ask", json={"question": "What is a service provider?", "limit": 99}), 400, "FIELD_INVALID")
