"""A source's new version, and a module that cannot be rebuilt (issue #20 item 4, review findings):
the old version's contributions stop counting when the pointer moves (a ``source_replaced``
event), not when the new version is published, so a question asked meanwhile is answered from
what is current instead of ``SOURCE_CHANGED`` again and again; a module whose builder fails keeps
its version where its inputs still count and is otherwise suspended, with its concept, out of
the search; trees pin no version of a concept withdrawn or suspended. The lists the dashboard
polls read in a fixed number of queries, however many sources and concepts there are.

No worker runs in this world: messages run in the request that sends them inside
``inline_tasks``, and outside it the test runs a queued event or job itself."""
from __future__ import annotations

from typing import Any

import pytest
from knowledge_tour import QUESTION, A, B, inline_tasks, knowledge_notebook
from sqlalchemy import select
from test_openapi import Contract

from app.services import knowledge_concepts
from pipeline.knowledge.concepts import OfflineConceptEngine
from pipeline.types import PipelineError
from storage.knowledge import concepts
from storage.models import KnowledgeConcept, KnowledgeModule, Notebook
from support.statements import recorded_statements
from support_api import services_of
from tasks import knowledge as knowledge_tasks
from tasks.knowledge import advance
from tasks.knowledge import event as process_event


@pytest.fixture
def contract(world) -> Contract:  # type: ignore[no-untyped-def]
    """Every response checked against the OpenAPI document, as in the tour."""
    return Contract(world.app)


def both_published(world: Any, contract: Any) -> tuple[str, dict[str, Any]]:
    """The notebook of A and B, both source notes published; the concept both feed."""
    notebook_id = knowledge_notebook(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    with inline_tasks(world):
        for resource_id in (A, B):
            contract.check(world.call("POST", f"{base}/sources", json={"resource_id": resource_id}), 202)
    listed = contract.check(world.call("GET", f"{base}/concepts"), 200).json["items"]
    shared = next(c for c in listed if c["state"] == "active" and c["source_version_count"] == 2)
    return notebook_id, shared


def counting_sources(world: Any, base: str, concept_id: str) -> set[str]:
    shown = world.call("GET", f"{base}/concepts/{concept_id}").json
    return {c["source_version_id"] for c in shown["contributions"] if c["counts"]}


def test_a_new_version_stops_the_old_ones_contributions_counting_before_it_is_published(world, contract) -> None:  # type: ignore[no-untyped-def]
    notebook_id, shared = both_published(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    versions = {s["resource_id"]: s["active_version"]["id"] for s in world.call("GET", f"{base}/sources").json["items"]}
    assert counting_sources(world, base, shared["id"]) == {versions[A], versions[B]}
    tree = contract.check(world.call("POST", f"{base}/trees", json={"title": "DMCA", "nodes": [
        {"key": "c", "parent": None, "kind": "concept", "concept_id": shared["id"]}]}), 201).json

    forced = contract.check(world.call("POST", f"{base}/sources", json={"resource_id": B, "new_version": True}), 202).json
    replaced = world.call("GET", f"{base}/events").json["items"][0]
    assert (replaced["kind"], replaced["state"]) == ("source_replaced", "queued"), replaced
    assert replaced["subject"] == {"source_id": forced["source"]["id"], "replaced_version_id": versions[B],
                                   "version_id": forced["version"]["id"]}
    with world.app.app_context():
        assert process_event(replaced["id"]) == "done"

    assert counting_sources(world, base, shared["id"]) <= {versions[A]}, "B's old notes feed nothing now"
    asked = world.call("POST", f"{base}/ask", json={"question": QUESTION})
    assert asked.status_code == 200, asked.json  # not SOURCE_CHANGED: nothing found rests on the old version
    assert versions[B] not in {c["source_version_id"] for c in asked.json["citations"]}
    concept = world.call("GET", f"{base}/concepts/{shared['id']}").json
    pinned = world.call("GET", f"{base}/trees/{tree['id']}").json["nodes"][0]["concept_version_id"]
    assert pinned == (concept["active_version"]["id"] if concept["state"] == "active" else None)

    with inline_tasks(world), world.app.app_context():  # the new version's job, as a worker would run it
        advance(forced["version"]["job"]["id"])
    job = world.call("GET", f"{base}/jobs/{forced['version']['job']['id']}").json
    assert job["state"] in ("completed", "completed_with_warnings"), job
    assert counting_sources(world, base, shared["id"]) == {versions[A], forced["version"]["id"]}


def test_a_module_that_cannot_be_rebuilt_keeps_a_version_that_holds_and_is_otherwise_suspended(world, contract) -> None:  # type: ignore[no-untyped-def]
    notebook_id, shared = both_published(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    tree = contract.check(world.call("POST", f"{base}/trees", json={"title": "DMCA", "nodes": [
        {"key": "c", "parent": None, "kind": "concept", "concept_id": shared["id"]}]}), 201).json
    svc = services_of(world)

    class Failing(OfflineConceptEngine):
        def build_module(self, title: str, contributions: list[Any], *, concept: str = "") -> list[dict]:
            raise PipelineError("LLM_UNAVAILABLE", "The model server did not answer.")

    problems: list[str] = []

    def rebuild_all() -> tuple[list[str], str]:
        with svc.db.reader() as session:
            module_ids = list(session.scalars(select(KnowledgeModule.id).where(KnowledgeModule.concept_id == shared["id"])))
        outcomes = [knowledge_concepts.rebuild_module(svc.db, module_id, Failing(), problems=problems) for module_id in module_ids]
        with svc.db.session() as session:
            concept = session.get(KnowledgeConcept, shared["id"])
            assert concept.notebook_id == notebook_id
            return outcomes, concepts.publish_concept(session, concept, None)

    outcomes, published = rebuild_all()  # nothing changed: every version holds
    assert set(outcomes) == {"unchanged"} and published == "unchanged"

    source_b = next(s for s in world.call("GET", f"{base}/sources").json["items"] if s["resource_id"] == B)
    contract.check(world.call("DELETE", f"{base}/sources/{source_b['id']}"), 200)  # its event waits: no worker
    outcomes, published = rebuild_all()
    assert "suspended" in outcomes and published == "suspended", (outcomes, published)
    assert problems and all(p.endswith("The model server did not answer.") for p in problems), "the event says why"
    assert world.call("GET", f"{base}/concepts/{shared['id']}").json["state"] == "suspended"
    found = world.call("GET", f"{base}/search", query_string={"q": shared["name"]}).json["items"]
    assert shared["id"] not in {hit["id"] for hit in found}, "a suspended concept is out of the search"
    assert world.call("GET", f"{base}/trees/{tree['id']}").json["nodes"][0]["concept_version_id"] is None

    deleted = world.call("GET", f"{base}/events").json["items"][0]
    assert deleted["kind"] == "source_deleted"
    with world.app.app_context():  # the event rebuilds with the engine that works: maintenance done
        assert process_event(deleted["id"]) == "done"
    concept = world.call("GET", f"{base}/concepts/{shared['id']}").json
    assert concept["state"] == "active", concept
    assert world.call("GET", f"{base}/trees/{tree['id']}").json["nodes"][0]["concept_version_id"] == concept["active_version"]["id"]


def test_a_module_built_while_its_sources_changed_is_not_stored_from_the_old_inputs(world, contract) -> None:  # type: ignore[no-untyped-def]
    """The engine builds holding no lock (a model takes seconds): B is restored while the module
    is being built from A alone, so what was built is stale; the A+B version it shows holds again."""
    notebook_id, shared = both_published(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    svc = services_of(world)
    source_b = next(s for s in world.call("GET", f"{base}/sources").json["items"] if s["resource_id"] == B)
    with svc.db.reader() as session:
        modules = {m.id: m.active_version_id for m in session.scalars(select(KnowledgeModule).where(KnowledgeModule.concept_id == shared["id"]))}
    contract.check(world.call("DELETE", f"{base}/sources/{source_b['id']}"), 200)  # its event waits: no worker
    built: list[set[str]] = []

    class RestoringB(OfflineConceptEngine):
        def build_module(self, title: str, contributions: list[Any], *, concept: str = "") -> list[dict]:
            built.append({c.source_version_id for c in contributions})
            contract.check(world.call("POST", f"{base}/sources/{source_b['id']}/restore"), 200)
            return super().build_module(title, contributions, concept=concept)

    outcomes = {module_id: knowledge_concepts.rebuild_module(svc.db, module_id, RestoringB()) for module_id in modules}
    assert built and source_b["active_version"]["id"] not in set().union(*built), "built from A alone"
    assert set(outcomes.values()) == {"unchanged"}, outcomes
    with svc.db.reader() as session:
        assert {m: session.get(KnowledgeModule, m).active_version_id for m in modules} == modules


def test_decisions_are_made_again_when_the_concepts_change_while_the_engine_decides(world, contract, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    notebook_id = knowledge_notebook(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    svc = services_of(world)
    with inline_tasks(world):
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": A}), 202)
        monkeypatch.setattr(knowledge_tasks, "send_event", lambda event_id: None)  # B's event is run below
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": B}), 202)
    event = world.call("GET", f"{base}/events").json["items"][0]
    assert (event["kind"], event["state"]) == ("note_published", "queued")
    decided: list[str] = []

    class Racing(OfflineConceptEngine):
        def decide(self, note: Any, candidates: Any, shared_terms: Any) -> Any:
            if not decided:  # another event founds a concept meanwhile
                with svc.db.session() as session:
                    concepts.create_concept(session, session.get(Notebook, notebook_id), "Anti-circumvention")
            decided.append(note.note_id)
            return super().decide(note, candidates, shared_terms)

    ref = knowledge_concepts.EventRef(event["id"], notebook_id, event["kind"], event["subject"])
    result = knowledge_concepts.process(svc.db, ref, Racing())
    assert decided.count(decided[0]) == 2, "the first round's decisions rest on concepts that changed: decided again"
    assert result["modules"] and any(c["source_version_count"] == 2 for c in world.call("GET", f"{base}/concepts").json["items"])


def test_the_polled_lists_read_in_a_fixed_number_of_queries(world, contract) -> None:  # type: ignore[no-untyped-def]
    notebook_id = knowledge_notebook(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    engine = services_of(world).db.engine

    def statements() -> dict[str, int]:
        counted = {}
        for listed in ("sources", "concepts", "jobs"):
            with recorded_statements(engine) as run:
                contract.check(world.call("GET", f"{base}/{listed}"), 200)
            counted[listed] = len(run)
        return counted

    with inline_tasks(world):
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": A}), 202)
    one = statements()
    with inline_tasks(world):
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": B}), 202)
    shown = {name: len(world.call("GET", f"{base}/{name}").json["items"]) for name in ("sources", "concepts", "jobs")}
    assert shown["sources"] == 2 and shown["concepts"] >= 2 and shown["jobs"] == 2, shown
    assert statements() == one, "a query per source, job or concept"

    def asked(limit: int) -> tuple[int, int]:
        with recorded_statements(engine) as run:
            answered = contract.check(world.call("POST", f"{base}/ask", json={"question": QUESTION, "limit": limit}), 200).json
        return len(answered["hits"]), len(run)

    few, many = asked(2), asked(20)
    assert few[0] < many[0] and few[1] == many[1], f"hits and statements: {few} then {many}"
