"""The OpenAI-compatible engine against a scripted streaming server running as a real process."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipeline.answering.llm import OpenAICompatibleEngine
from pipeline.answering.tools import SEARCH_NOTEBOOK, notebook_tools
from pipeline.answering.types import AnswerEvent, EvidenceItem, ToolRegistry
from pipeline.chunker import chunk_segments
from pipeline.extractors import extract
from pipeline.types import PipelineError
from support.fake_openai_server import FAKE_CHUNK_ID
from support.services import REPO, free_port

QUESTION = "Who signed the DMCA into law?"
SERVER = REPO / "tests" / "support" / "fake_openai_server.py"


@pytest.fixture(scope="module")
def chunks(corpus_dir: Path) -> list[EvidenceItem]:
    extraction = extract((corpus_dir / "pdf" / "dmca.pdf").read_bytes(), filename="dmca.pdf")
    return [
        EvidenceItem(chunk.chunk_id, "rev-1", "res-1", "src-1", chunk.text, chunk.locator, 0.0, extraction.title)
        for chunk in chunk_segments(extraction.segments, source_fingerprint="dmca")
    ]


@pytest.fixture
def tools(chunks: list[EvidenceItem]) -> ToolRegistry:
    def search(query: str, limit: int) -> list[EvidenceItem]:
        words = set(query.lower().split())
        return sorted(chunks, key=lambda item: -len(words & set(item.text.lower().split())))[:limit]

    return notebook_tools(search=search, read={item.chunk_id: item for item in chunks}.get, inspect=list)


def requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def engine(url: str, **options: object) -> OpenAICompatibleEngine:
    return OpenAICompatibleEngine(url, "fake-model", "secret", timeout=5, **options)  # type: ignore[arg-type]


def done_of(events: list[AnswerEvent]) -> dict:
    assert events[-1].type == "done" and [event.type for event in events].count("done") == 1
    return events[-1].data


def test_a_split_tool_call_runs_a_search_and_invented_ids_are_dropped(fake_server, tools) -> None:
    url, log = fake_server(
        [
            {
                "tool_calls": [
                    {"name": SEARCH_NOTEBOOK, "arguments": '{"query": "President Clinton signed", "limit": 3}'}
                ]
            },
            {"text": "President Clinton signed the DMCA [{chunk:0}] on October 28, 1998 [{fake_chunk}]."},
        ]
    )

    events = list(engine(url).answer(QUESTION, tools))

    tool_events = [event.data for event in events if event.type == "tool" and event.data["state"] == "done"]
    assert [event.data["state"] for event in events if event.type == "tool"] == ["running", "done"] * 2
    assert [(t["name"], t["arguments"]["query"]) for t in tool_events] == [
        (SEARCH_NOTEBOOK, QUESTION),
        (SEARCH_NOTEBOOK, "President Clinton signed"),
    ]
    assert tool_events[1]["result_count"] == 3
    first, second = requests(log)
    real_id = json.loads(second["messages"][-1]["content"])[0]["chunk_id"]  # what {chunk:0} named
    done = done_of(events)
    assert done["status"] == "answered"
    assert FAKE_CHUNK_ID not in done["text"] and FAKE_CHUNK_ID not in "".join(
        event.data["text"] for event in events if event.type == "token"
    )
    assert done["text"] == "".join(event.data["text"] for event in events if event.type == "token")
    assert [c["chunk_id"] for c in done["citations"]] == [real_id]
    assert "President Clinton" in done["citations"][0]["quote"]
    assert done["citations"][0]["quote"] in tools.seen(real_id).text
    assert tools.calls[1].arguments == {"query": "President Clinton signed", "limit": 3}
    assert first["stream"] is True and first["tool_choice"] == "auto"
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        SEARCH_NOTEBOOK,
        "read_evidence",
        "inspect_sources",
    ]
    assert [message["role"] for message in first["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["arguments"] == (
        '{"query": "President Clinton signed", "limit": 3}'
    )
    assert second["messages"][-1]["tool_call_id"] == "call_0"


def test_a_forged_claim_from_the_model_is_dropped_and_counted(fake_server, tools) -> None:
    url, _ = fake_server([{
        "text": "The DMCA was signed into law by President Clinton [{chunk:0}]. "
                "It also bans all photocopiers in public libraries [{chunk:0}].",
    }])

    done = done_of(list(engine(url).answer(QUESTION, tools)))

    assert done["dropped"] == 1 and len(done["citations"]) == 1
    assert done["text"].endswith("It also bans all photocopiers in public libraries [unverified].")
    assert done["citations"][0]["quote"] in tools.seen(done["citations"][0]["chunk_id"]).text


def test_a_model_that_never_searches_still_gets_a_real_search_first(fake_server, tools) -> None:
    url, log = fake_server([{"text": "It was signed in 1998, I believe."}])

    events = list(engine(url).answer(QUESTION, tools))

    assert events[0].type == "tool" and events[0].data["name"] == SEARCH_NOTEBOOK
    assert [call.name for call in tools.calls] == [SEARCH_NOTEBOOK]
    (request,) = requests(log)
    evidence = json.loads(request["messages"][-1]["content"])
    assert request["messages"][-1]["role"] == "tool" and evidence[0]["chunk_id"] and evidence[0]["ref"] == 1
    done = done_of(events)
    assert done == {"text": "It was signed in 1998, I believe.", "status": "no_evidence", "citations": [], "dropped": 0}


def test_numbered_markers_cite_the_numbered_evidence(fake_server, tools) -> None:
    url, _ = fake_server([{"text": "Signed into law in 1998 [1]. See also [99].", "piece_chars": 3}])

    done = done_of(list(engine(url).answer(QUESTION, tools)))

    first = tools.numbered(1)
    assert done["text"] == f"Signed into law in 1998 [{first.chunk_id}]. See also."
    assert [c["chunk_id"] for c in done["citations"]] == [first.chunk_id]


def test_bad_tool_calls_are_answered_with_errors_and_the_loop_goes_on(fake_server, tools) -> None:
    url, log = fake_server(
        [
            {
                "tool_calls": [
                    {"name": "delete_everything", "arguments": "{}"},
                    {"name": SEARCH_NOTEBOOK, "arguments": '{"query": "x", "limit": 500}'},
                    {"name": SEARCH_NOTEBOOK, "arguments": '{"query": '},
                ]
            },
            {"text": "The sources do not say."},
        ]
    )

    events = list(engine(url).answer(QUESTION, tools))

    assert [e.data["result_count"] for e in events if e.type == "tool" and e.data["state"] == "done"] == [8, 0, 0, 0]
    tool_messages = [m["content"] for m in requests(log)[1]["messages"] if m["role"] == "tool"][1:]
    errors = [json.loads(content)["error"]["code"] for content in tool_messages]
    assert errors == ["TOOL_UNKNOWN", "TOOL_ARGUMENTS_INVALID", "TOOL_ARGUMENTS_INVALID"]
    assert done_of(events)["status"] == "no_evidence"


def test_the_model_must_answer_after_the_last_tool_round(fake_server, tools) -> None:
    url, log = fake_server([{"tool_calls": [{"name": SEARCH_NOTEBOOK, "arguments": '{"query": "again"}'}]}])

    events = list(engine(url, max_tool_rounds=2).answer(QUESTION, tools))

    sent = requests(log)
    assert [request["tool_choice"] for request in sent] == ["auto", "auto", "none"]
    assert len(tools.calls) == 3  # the forced search and two rounds of the model's
    assert done_of(events)["status"] == "no_evidence"


def test_generation_stops_promptly_when_the_client_goes_away(fake_server, tools) -> None:
    url, _ = fake_server([{"text": "word " * 200, "piece_chars": 5, "delay": 0.05}])
    events: list[AnswerEvent] = []
    started = time.monotonic()

    def gone() -> bool:
        return sum(event.type == "token" for event in events) == 3

    for event in engine(url).answer(QUESTION, tools, should_stop=gone):
        events.append(event)

    assert time.monotonic() - started < 2
    assert [event.type for event in events] == ["tool", "tool", "token", "token", "token"]


def test_an_endpoint_that_is_down_fails_fast_with_a_code(tools) -> None:
    started = time.monotonic()

    with pytest.raises(PipelineError) as error:
        list(engine(f"http://127.0.0.1:{free_port()}/v1").answer(QUESTION, tools))

    assert error.value.code == "LLM_UNAVAILABLE"
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("status", "code"), [(500, "LLM_UNAVAILABLE"), (429, "LLM_UNAVAILABLE"), (401, "LLM_REJECTED")]
)
def test_http_errors_become_codes(fake_server, tools, status: int, code: str) -> None:
    url, _ = fake_server([{"status": status}])

    with pytest.raises(PipelineError) as error:
        list(engine(url).answer(QUESTION, tools))

    assert error.value.code == code
