"""The chat's analysis tools, through /api/chat with the model engine and the scripted server (a
real process): a turn starts an analysis under the API's rules, a later turn finds it, reads its
result and cites the evidence of its points; a start the API would refuse is refused with its code."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.analysis.batches import BatchBounds
from pipeline.answering.llm import OpenAICompatibleEngine
from storage.models import Analysis
from support.analysis_runs import run_analysis
from support.sse import parse_sse
from support_api import create_notebook, index, services_of

BOUNDS = BatchBounds(max_items=10, max_chars=12_000)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}


def _chat(world, notebook_id: str, message: str, who: str = "alice") -> list[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    response = world.call("POST", "/api/chat", who=who, json={"notebook_id": notebook_id, "message": message})
    assert response.status_code == 200, response.get_data(as_text=True)
    return parse_sse(response.get_data(as_text=True))


def _tool_results(log: Path, request: int) -> list[dict[str, Any]]:
    messages = json.loads(log.read_text().splitlines()[request])["messages"]
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def test_a_turn_starts_an_analysis_and_a_later_one_reads_and_cites_it(  # type: ignore[no-untyped-def]
    world, fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    url, log = fake_server([
        _call("start_analysis", kind="timeline", instruction="takedown notices"),
        {"text": "I started a timeline of the notices; it runs in the background."},
        _call("inspect_analyses"),
        _call("read_analysis", analysis_id="{analysis_id}"),
        {"text": "The analysis found that {chunk_sentence:0} [{chunk:0}]"},
        {"tool_calls": [{"name": "start_analysis", "arguments": '{"kind": "poem"}'}, {"name": "start_analysis", "arguments": "{}"}]},
        {"text": "I cannot start another one now."},
    ])
    services_of(world).__dict__["answer_engine"] = OpenAICompatibleEngine(url, "fake-model")
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    index(world, notebook_id)

    started = _chat(world, notebook_id, "Make me a timeline of the takedown notices.")
    assert ("tool", {"name": "start_analysis", "arguments": {"kind": "timeline", "instruction": "takedown notices"},
                     "state": "done", "result_count": 1}) in started
    listed = world.call("GET", f"/api/notebooks/{notebook_id}/analyses").json["items"]
    assert [(a["kind"], a["instruction"], a["requested_by"] is not None) for a in listed] == [("timeline", "takedown notices", True)]
    analysis_id = listed[0]["id"]
    assert _tool_results(log, 1)[-1]["analysis_id"] == analysis_id

    run_analysis(services_of(world).db, notebook_id, analysis_id, BOUNDS)
    assert world.call("POST", f"/api/notebooks/{notebook_id}/refresh").status_code == 202
    current = index(world, notebook_id)  # a new revision, serving the same chunks
    read = _chat(world, notebook_id, "What did the timeline find?")
    done = read[-1][1]
    assert read[-1][0] == "done" and done["status"] == "answered" and done["dropped"] == 0
    with services_of(world).db.reader() as session:
        result = session.get(Analysis, analysis_id).result
    cited = {chunk for point in result["points"] for chunk in point["chunk_ids"]}
    assert [c["chunk_id"] for c in done["citations"]] and {c["chunk_id"] for c in done["citations"]} <= cited
    assert done["citations"][0]["open_url"] and done["citations"][0]["title"] == "Digital Millennium Copyright Act"
    assert {c["revision_id"] for c in done["citations"]} == {current}, "cited in the revision the turn pins"
    assert listed[0]["revision_id"] != current
    shown = _tool_results(log, 4)[-1]
    assert shown["state"] == "succeeded" and shown["points"] and all(p["evidence"] for p in shown["points"])

    for _ in range(3):  # queued, as no worker runs here: the notebook's limit of running analyses
        assert world.call("POST", f"/api/notebooks/{notebook_id}/analyses", json={}).status_code == 202
    refused = _chat(world, notebook_id, "Start a poem, or else a summary.")
    assert refused[-1][0] == "done"
    bad_kind, too_many = _tool_results(log, 6)[-2:]
    assert bad_kind["error"]["code"] == "TOOL_ARGUMENTS_INVALID" and "timeline" in bad_kind["error"]["message"]
    assert too_many["error"]["code"] == "TOO_MANY_ANALYSES"
    assert world.call("GET", f"/api/notebooks/{notebook_id}/analyses").json["total"] == 4


def test_in_private_conversation_mode_the_tools_show_a_member_only_their_own_analyses(  # type: ignore[no-untyped-def]
    world, fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    response = world.call("POST", "/api/notebooks", json={
        "title": "Private", "visibility": "workspace", "conversation_mode": "private", "resource_ids": ["dmca"],
    })
    notebook_id = response.json["id"]
    index(world, notebook_id)
    base = f"/api/notebooks/{notebook_id}/analyses"
    alices = world.call("POST", base, json={"kind": "faq"}).json["id"]
    bobs = world.call("POST", base, who="bob", json={"kind": "timeline"}).json["id"]
    url, log = fake_server([
        {"tool_calls": [{"name": "inspect_analyses", "arguments": "{}"},
                        {"name": "read_analysis", "arguments": json.dumps({"analysis_id": alices})}]},
        {"text": "I can only see your timeline."},
    ])
    services_of(world).__dict__["answer_engine"] = OpenAICompatibleEngine(url, "fake-model")
    assert _chat(world, notebook_id, "Which analyses are there?", who="bob")[-1][0] == "done"
    listed, refused = _tool_results(log, 1)[-2:]
    assert [a["analysis_id"] for a in listed] == [bobs]
    assert refused["error"]["code"] == "ANALYSIS_NOT_FOUND"
