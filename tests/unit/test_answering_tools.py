"""The per-turn tool registry: argument checks, bounds, and the record of evidence seen."""
from __future__ import annotations

import pytest

from pipeline.answering.extractive import ExtractiveEngine
from pipeline.answering.tools import INSPECT_SOURCES, READ_EVIDENCE, SEARCH_NOTEBOOK, notebook_tools
from pipeline.answering.types import EvidenceItem, ToolRegistry, ToolSpec
from pipeline.types import PipelineError

ITEMS = [
    EvidenceItem(
        f"ch_{n:020x}", "rev-1", "res-1", "src-1", f"Paragraph {n} about lighthouses and keepers.", {"page": n}
    )
    for n in range(60)
]
HIDDEN = EvidenceItem("ch_" + "f" * 20, "rev-1", "res-2", "src-2", "Not selected for this turn.", {"page": 1})


def registry() -> ToolRegistry:
    return notebook_tools(
        search=lambda query, limit: ITEMS,  # a careless server returning too much is still cut
        read=lambda chunk_id: next((item for item in ITEMS if item.chunk_id == chunk_id), None),
        inspect=lambda: [{"title": "x" * 1000, "kind": "attachment", "nested": {"a": 1}}] * 500,
    )


def test_built_in_tools_are_registered_in_a_stable_order() -> None:
    assert [spec.name for spec in registry().specs()] == [SEARCH_NOTEBOOK, READ_EVIDENCE, INSPECT_SOURCES]


def test_search_is_bounded_and_records_every_result() -> None:
    tools = registry()

    results = tools.call(SEARCH_NOTEBOOK, {"query": "lighthouse"})

    assert len(results) == 8  # the default limit
    assert len(tools.call(SEARCH_NOTEBOOK, {"query": "lighthouse", "limit": 50})) == 50
    assert tools.seen(ITEMS[49].chunk_id) == ITEMS[49]
    assert tools.seen(ITEMS[50].chunk_id) is None
    assert tools.reference_number(ITEMS[0].chunk_id) == 1 and tools.numbered(2) == ITEMS[1]
    assert [(call.name, call.arguments, call.result_count) for call in tools.calls] == [
        (SEARCH_NOTEBOOK, {"query": "lighthouse", "limit": 8}, 8),
        (SEARCH_NOTEBOOK, {"query": "lighthouse", "limit": 50}, 50),
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "x", "limit": 51},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": "5"},
        {"query": "x", "limit": True},
        {"query": 42},
        {"query": "x" * 2001},
        {},
        {"query": "x", "revision": "another"},
        ["x"],
    ],
)
def test_arguments_outside_the_schema_are_refused_before_the_tool_runs(arguments: object) -> None:
    tools = registry()

    with pytest.raises(PipelineError) as error:
        tools.call(SEARCH_NOTEBOOK, arguments)  # type: ignore[arg-type]

    assert error.value.code == "TOOL_ARGUMENTS_INVALID"
    assert tools.calls == []


def test_unknown_tools_do_not_exist() -> None:
    with pytest.raises(PipelineError) as error:
        registry().call("delete_vault", {})
    assert error.value.code == "TOOL_UNKNOWN"


def test_read_evidence_records_what_it_returns_and_nothing_else() -> None:
    tools = registry()

    assert tools.call(READ_EVIDENCE, {"chunk_id": ITEMS[3].chunk_id}) == ITEMS[3]
    assert tools.call(READ_EVIDENCE, {"chunk_id": HIDDEN.chunk_id}) is None

    assert tools.seen(ITEMS[3].chunk_id) == ITEMS[3] and tools.seen(HIDDEN.chunk_id) is None
    assert [call.result_count for call in tools.calls] == [1, 0]


def test_inspect_sources_is_bounded() -> None:
    sources = registry().call(INSPECT_SOURCES, {})

    assert len(sources) == 200
    assert sources[0] == {"title": "x" * 300, "kind": "attachment"}


def test_a_later_tool_plugs_in_and_its_evidence_becomes_citeable() -> None:
    tools = registry()
    tools.register(
        ToolSpec(
            "read_analysis",
            "Read a finished analysis.",
            {"type": "object", "properties": {"analysis_id": {"type": "string"}}, "required": ["analysis_id"]},
            lambda analysis_id: {"summary": "Keepers lived on site.", "evidence": [HIDDEN]},
        )
    )

    tools.call("read_analysis", {"analysis_id": "an-1"})

    assert tools.seen(HIDDEN.chunk_id) == HIDDEN
    done = list(ExtractiveEngine().answer("Where did the lighthouse keepers live?", tools))[-1]
    assert done.type == "done"  # the engine needs no change to run beside the new tool
    with pytest.raises(ValueError):
        tools.register(ToolSpec("read_analysis", "", {"type": "object"}, lambda: None))
