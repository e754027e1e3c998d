"""Concepts that follow their sources, through the real API and a real Celery worker (the seed's
scenarios, docs/decisions/0021): two PDFs on one subject (the halves of a real report), A and B,
feed one concept. Publishing B
builds its module from A and B; deleting B rebuilds it from A; restoring B reuses the A+B module
version; B uploaded again after a deletion is a new source whose new notes build a new module
version; deleting both withdraws the concept. An event processed twice changes nothing."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from steps.conftest import wait_for
from steps.test_knowledge_source_notes import add, finished
from storage.models import (
    KnowledgeConcept,
    KnowledgeConceptVersion,
    KnowledgeContribution,
    KnowledgeEvent,
    KnowledgeModule,
    KnowledgeModuleVersion,
)
from tasks.knowledge import event as process_event

if TYPE_CHECKING:
    from steps.conftest import Instance

# The two halves of the Copyright Office's summary of the DMCA (18 pages): one subject, two
# documents, each of which says "service provider" and "copyright owner" where the other does.
A, B = "dmca-first", "dmca-second"


@pytest.fixture
def pair(instance: Instance) -> tuple[Instance, str]:
    instance.lab.vault.pdf_pages_record(A, "dmca.pdf", range(0, 9), title="The DMCA: titles I and II")
    instance.lab.vault.pdf_pages_record(B, "dmca.pdf", range(9, 18), title="The DMCA: titles III to V")
    notebook_id, job_id = instance.create_notebook([A, B])
    assert instance.wait_job_end(job_id).state == "succeeded"
    return instance, notebook_id


def published(instance: Instance, notebook_id: str, resource_id: str) -> str:
    """Add a member's PDF, wait for its source note and for the concepts to follow; its source id."""
    response = add(instance, notebook_id, resource_id)
    assert response.status_code == 202, response.json
    assert finished(instance, notebook_id, response.json["version"]["job"]["id"])["state"].startswith("completed")
    settled(instance)
    return response.json["source"]["id"]


def settled(instance: Instance) -> None:
    wait_for(lambda: instance.read(lambda s: all(e.state == "done" for e in s.scalars(select(KnowledgeEvent)))),
             "every knowledge event to be processed")


def state(instance: Instance) -> dict[str, Any]:
    """The shared concept's module: its state, its active version, and which sources its inputs are."""

    def read(session: Any) -> dict[str, Any]:
        concepts = {c.id: c for c in session.scalars(select(KnowledgeConcept))}
        modules = list(session.scalars(select(KnowledgeModule)))
        shown = {}
        for module in modules:
            version = session.get(KnowledgeModuleVersion, module.active_version_id) if module.active_version_id else None
            fed = {c.source_version_id for c in session.scalars(select(KnowledgeContribution).where(
                KnowledgeContribution.id.in_(version.contribution_ids if version else [])))}
            shown[module.id] = {"state": module.state, "version": version.id if version else None, "sources": fed,
                                "concept": concepts[module.concept_id].state, "name": concepts[module.concept_id].name}
        return shown

    return instance.read(read)


def source_versions(instance: Instance, notebook_id: str) -> dict[str, str]:
    items = instance.call("GET", f"/api/notebooks/{notebook_id}/knowledge/sources").json["items"]
    return {item["id"]: item["active_version"]["id"] for item in items}


def test_a_concept_follows_its_sources_through_delete_restore_and_upload_again(pair: tuple[Instance, str]) -> None:
    instance, notebook_id = pair
    a = published(instance, notebook_id, A)
    assert state(instance) == {}, "one source alone shares no term with another"
    b = published(instance, notebook_id, B)
    versions = source_versions(instance, notebook_id)
    both = state(instance)
    shared = {m: s for m, s in both.items() if s["sources"] == {versions[a], versions[b]}}
    assert shared, f"no module is fed by both sources: {both}"

    deleted = instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{b}")
    assert deleted.status_code == 200 and deleted.json["state"] == "deleted"
    settled(instance)
    after_delete = state(instance)
    for module_id, before in shared.items():
        assert after_delete[module_id]["state"] == "active" and after_delete[module_id]["sources"] == {versions[a]}
        assert after_delete[module_id]["version"] != before["version"]

    restored = instance.call("POST", f"/api/notebooks/{notebook_id}/knowledge/sources/{b}/restore")
    assert restored.status_code == 200 and restored.json["state"] == "active"
    settled(instance)
    after_restore = state(instance)
    for module_id, before in shared.items():  # the A+B version is reused, not built again
        assert after_restore[module_id]["version"] == before["version"]

    instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{b}")
    settled(instance)
    again = published(instance, notebook_id, B)
    assert again != b, "a deleted source is no duplicate: the same file is a new source"
    versions = source_versions(instance, notebook_id)
    after_upload = state(instance)
    for module_id, before in shared.items():
        assert after_upload[module_id]["sources"] == {versions[a], versions[again]}
        assert after_upload[module_id]["version"] not in (before["version"], after_delete[module_id]["version"])

    for source_id in (a, again):
        instance.call("DELETE", f"/api/notebooks/{notebook_id}/knowledge/sources/{source_id}")
    settled(instance)
    assert all(s["state"] == "withdrawn" and s["concept"] == "withdrawn" for s in state(instance).values())


def test_an_event_processed_twice_changes_nothing(pair: tuple[Instance, str]) -> None:
    instance, notebook_id = pair
    published(instance, notebook_id, A)
    published(instance, notebook_id, B)

    def counts(session: Any) -> tuple[int, ...]:
        return tuple(len(list(session.scalars(select(model)))) for model in (
            KnowledgeConcept, KnowledgeConceptVersion, KnowledgeModuleVersion, KnowledgeContribution))

    before = instance.read(counts)
    for event_id in instance.read(lambda s: [e.id for e in s.scalars(select(KnowledgeEvent))]):
        assert process_event(event_id) is None  # done already: not taken again
    assert instance.read(counts) == before
    again = add(instance, notebook_id, A)
    assert again.status_code == 200 and again.json["duplicate"]
    assert instance.read(lambda s: len(list(s.scalars(select(KnowledgeEvent))))) == 2


def test_concepts_and_trees_are_read_and_arranged_through_the_api(pair: tuple[Instance, str]) -> None:
    instance, notebook_id = pair
    base = f"/api/notebooks/{notebook_id}/knowledge"
    published(instance, notebook_id, A)
    b = published(instance, notebook_id, B)
    listed = instance.call("GET", f"{base}/concepts").json["items"]
    shared = next(c for c in listed if c["state"] == "active" and c["source_version_count"] == 2)
    concept = instance.call("GET", f"{base}/concepts/{shared['id']}").json
    points = [p for m in concept["modules"] if m["version"] for p in m["version"]["points"]]
    assert points and all(e["file_url"].endswith(f"#page={e['page']}") for p in points for e in p["evidence"])
    assert all(c["counts"] for c in concept["contributions"])
    assert instance.call("GET", f"{base}/concepts/{'0' * 32}").json["code"] == "CONCEPT_NOT_FOUND"

    nodes = [{"key": "law", "parent": None, "kind": "group", "title": "Copyright law"},
             {"key": "c1", "parent": "law", "kind": "concept", "concept_id": shared["id"]}]
    made = instance.call("POST", f"{base}/trees", json={"title": "My DMCA", "nodes": nodes})
    assert made.status_code == 201, made.json
    assert made.json["nodes"][1]["concept_version_id"] == concept["active_version"]["id"]
    bad = instance.call("POST", f"{base}/trees", json={"title": "Broken", "nodes": [nodes[1]]})
    assert bad.status_code == 400 and bad.json["code"] == "TREE_INVALID"

    instance.call("DELETE", f"{base}/sources/{b}")  # the concept is rebuilt from A: the tree follows
    settled(instance)
    tree = instance.call("GET", f"{base}/trees/{made.json['id']}").json
    rebuilt = instance.call("GET", f"{base}/concepts/{shared['id']}").json
    assert tree["version"]["number"] == 2 and [n["key"] for n in tree["nodes"]] == ["law", "c1"]
    assert tree["nodes"][1]["concept_version_id"] == rebuilt["active_version"]["id"] != concept["active_version"]["id"]
    assert not all(c["counts"] for c in rebuilt["contributions"]), "B's contributions stopped counting"
    stale = instance.call("PUT", f"{base}/trees/{tree['id']}", json={"expected_version_id": made.json["version"]["id"], "nodes": nodes})
    assert stale.status_code == 409 and stale.json["code"] == "VERSION_CONFLICT"
    moved = instance.call("PUT", f"{base}/trees/{tree['id']}", json={"expected_version_id": tree["version"]["id"], "nodes": nodes[:1]})
    assert moved.status_code == 200 and moved.json["version"]["number"] == 3 and len(moved.json["nodes"]) == 1

    feeding = {c["note_id"] for c in rebuilt["contributions"] if c["counts"]}
    note_id = sorted(feeding)[0]
    deleted = instance.call("DELETE", f"{base}/notes/{note_id}")
    assert deleted.status_code == 200 and deleted.json["note"]["state"] == "deleted"
    settled(instance)
    after = instance.call("GET", f"{base}/concepts/{shared['id']}").json
    assert note_id not in {c["note_id"] for c in after["contributions"] if c["counts"]}
    kinds = [e["kind"] for e in instance.call("GET", f"{base}/events").json["items"]]
    assert kinds[0] == "note_deleted" and "source_deleted" in kinds and kinds.count("note_published") == 2
