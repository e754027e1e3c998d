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

from datetime import timedelta
from typing import Any

import pytest
from knowledge_tour import QUESTION, A, B, inline_tasks, knowledge_notebook
from sqlalchemy import select
from test_openapi import Contract

from app.services import knowledge_concepts
from pipeline.knowledge.concepts import OfflineConceptEngine
from pipeline.types import PipelineError
from storage.knowledge import concepts
from storage.knowledge import events as knowledge_events
from storage.models import KnowledgeConcept, KnowledgeContribution, KnowledgeEvent, KnowledgeModule, Notebook
from support.statements import recorded_statements
from support_api import services_of
from tasks import knowledge as knowledge_tasks
from tasks.knowledge import EventLease, advance
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

    class Refusing(OfflineConceptEngine):
        def judge_module(self, title: str, contributions: list[Any], points: list[dict], *, concept: str = "") -> tuple[str, ...]:
            return ("Point 2 says more than its claim.",)

    problems: list[str] = []

    def rebuild_all(engine: OfflineConceptEngine) -> tuple[list[str], str]:
        with svc.db.reader() as session:
            module_ids = list(session.scalars(select(KnowledgeModule.id).where(KnowledgeModule.concept_id == shared["id"])))
        outcomes = [knowledge_concepts.rebuild_module(svc.db, module_id, engine, problems=problems) for module_id in module_ids]
        with svc.db.session() as session:
            concept = session.get(KnowledgeConcept, shared["id"])
            assert concept.notebook_id == notebook_id
            return outcomes, concepts.publish_concept(session, concept, None)

    outcomes, published = rebuild_all(Failing())  # nothing changed: every version holds
    assert set(outcomes) == {"unchanged"} and published == "unchanged"

    source_b = next(s for s in world.call("GET", f"{base}/sources").json["items"] if s["resource_id"] == B)
    contract.check(world.call("DELETE", f"{base}/sources/{source_b['id']}"), 200)  # its event waits: no worker
    outcomes, published = rebuild_all(Failing())
    assert "suspended" in outcomes and published == "suspended", (outcomes, published)
    assert problems and all(p.endswith("The model server did not answer.") for p in problems), "the event says why"
    problems.clear()
    outcomes, published = rebuild_all(Refusing())  # built, but its judge refuses it: not published either
    assert "suspended" in outcomes and published == "unchanged", (outcomes, published)
    assert problems and all(p.endswith("the module judge refused it: Point 2 says more than its claim.") for p in problems)
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


def b_published_its_event_waiting(world: Any, contract: Any, monkeypatch: Any) -> tuple[str, dict[str, Any]]:
    """The notebook of A and B, both source notes published; B's ``note_published`` event queued,
    not yet run (the caller runs it)."""
    notebook_id = knowledge_notebook(world, contract)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    with inline_tasks(world):
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": A}), 202)
        monkeypatch.setattr(knowledge_tasks, "send_event", lambda event_id: None)
        contract.check(world.call("POST", f"{base}/sources", json={"resource_id": B}), 202)
    event = world.call("GET", f"{base}/events").json["items"][0]
    assert (event["kind"], event["state"]) == ("note_published", "queued")
    return notebook_id, event


def test_decisions_are_made_again_when_an_offered_note_changes_while_the_engine_decides(world, contract, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    notebook_id, event = b_published_its_event_waiting(world, contract, monkeypatch)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    svc = services_of(world)
    decided: list[str] = []
    superseded: list[str] = []

    class Racing(OfflineConceptEngine):
        def decide(self, note: Any, candidates: Any, shared_terms: Any) -> Any:
            if not decided:  # a person edits the note meanwhile
                block = note.blocks[-1]
                edited = world.call("PATCH", f"{base}/notes/{note.note_id}/blocks/{block['key']}", json={
                    "expected_version_id": note.note_version_id, "text": block["text"] + " (checked)"})
                assert edited.status_code == 200, edited.json
                superseded.append(note.note_version_id)
            decided.append(note.note_id)
            return super().decide(note, candidates, shared_terms)

    ref = knowledge_concepts.EventRef(event["id"], notebook_id, event["kind"], event["subject"])
    result = knowledge_concepts.process(svc.db, ref, Racing())
    assert decided.count(decided[0]) == 2, "the first round's decisions rest on a note version that changed: decided again"
    with svc.db.reader() as session:
        assert not session.scalars(select(KnowledgeContribution).where(
            KnowledgeContribution.note_version_id == superseded[0])).all(), "nothing rests on the version replaced meanwhile"
    assert result["modules"] and any(c["source_version_count"] == 2 for c in world.call("GET", f"{base}/concepts").json["items"])


def test_an_event_taken_up_after_its_decisions_were_stored_rebuilds_without_deciding_again(world, contract, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Review finding: a message that died after storing its contributions left the concepts
    unbuilt (a resend of a note event found nothing to rebuild), or asked the model again."""
    notebook_id, event = b_published_its_event_waiting(world, contract, monkeypatch)
    base = f"/api/notebooks/{notebook_id}/knowledge"
    svc = services_of(world)

    class DyingAfterTheStore(OfflineConceptEngine):
        def build_module(self, title: str, contributions: list[Any], *, concept: str = "") -> list[dict]:
            raise RuntimeError("the worker died")

    class Counting(OfflineConceptEngine):
        decided = 0

        def decide(self, note: Any, candidates: Any, shared_terms: Any) -> Any:
            Counting.decided += 1
            return super().decide(note, candidates, shared_terms)

    with svc.db.session() as session:
        token = knowledge_events.claim(session.get(KnowledgeEvent, event["id"]), timedelta(minutes=5))
    ref = knowledge_concepts.EventRef(event["id"], notebook_id, event["kind"], event["subject"])
    with pytest.raises(RuntimeError):
        knowledge_concepts.process(svc.db, ref, DyingAfterTheStore())
    with svc.db.reader() as session:
        made = list(session.scalars(select(KnowledgeConcept)))
        assert made and all(c.active_version_id is None for c in made), "contributions stored, nothing published yet"

    monkeypatch.setattr(services_of(world), "concept_engine", Counting())
    with svc.db.session() as session:
        assert knowledge_events.claim(session.get(KnowledgeEvent, event["id"]), timedelta(minutes=5)) is None, "still held"
        knowledge_events.take_back(session.get(KnowledgeEvent, event["id"]))  # the sweeper's resend
    with world.app.app_context():
        assert process_event(event["id"]) == "done"
    assert Counting.decided == 0, "the stored decisions were not made again"
    assert any(c["state"] == "active" and c["source_version_count"] == 2 for c in world.call("GET", f"{base}/concepts").json["items"])
    assert token is not None


def test_a_message_that_lost_its_event_stops_and_a_lapsing_lease_is_renewed(world, contract, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Review finding: any message could claim a running event, so two workers decided one event
    at once; and the lease was renewed only after an engine's work, never before a request."""
    notebook_id, event = b_published_its_event_waiting(world, contract, monkeypatch)
    svc = services_of(world)
    with svc.db.session() as session:
        found = session.get(KnowledgeEvent, event["id"])
        first = knowledge_events.claim(found, timedelta(minutes=5))
        assert first and knowledge_events.claim(found, timedelta(minutes=5)) is None, "a second delivery is refused"
    with world.app.app_context():
        lease = EventLease(event["id"], first)
        lease.beat()
        assert lease.token == first, "renewed only once a fifth of the lease has passed"
        lease.renewed -= 3600
        lease.beat()
        assert lease.token != first
        with svc.db.session() as session:
            knowledge_events.take_back(session.get(KnowledgeEvent, event["id"]))  # the sweeper's resend takes it over
            assert knowledge_events.claim(session.get(KnowledgeEvent, event["id"]), timedelta(minutes=5))
        lease.renewed -= 3600
        with pytest.raises(knowledge_concepts.EventLost):
            lease.beat()
        with pytest.raises(knowledge_concepts.EventLost), svc.db.session() as session:
            lease.holds(session)


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
