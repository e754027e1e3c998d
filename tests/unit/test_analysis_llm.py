"""The model analysis engine against the scripted OpenAI-compatible server (a real process): every
point must cite inputs of its own step that support it; invented, misplaced and unsupported
citations are dropped, and a point left without one is dropped with them."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.analysis.llm import LLMAnalysisEngine
from pipeline.analysis.types import Focus, Passage, Point, Summary
from pipeline.types import PipelineError
from support.services import CORPUS

Script = Callable[[list[dict]], tuple[str, Path]]


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    """Three paragraphs of two real articles, as a map step reads them."""
    wanted = {"a00p000": 0, "a00p001": 1, "a01p000": 0}
    found = []
    for line in (CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl").open(encoding="utf-8"):
        paragraph = json.loads(line)
        if paragraph["_id"] in wanted:
            found.append(Passage(f"ch_{paragraph['_id']}", paragraph["title"], paragraph["text"], wanted[paragraph["_id"]]))
    assert len(found) == 3
    return found


def engine(url: str) -> LLMAnalysisEngine:
    return LLMAnalysisEngine(url, "fake-model", "secret")


def test_map_keeps_supported_citations_and_drops_invented_ones(fake_server: Script, passages: list[Passage]) -> None:
    url, log = fake_server([{"text": "\n".join([
        "- {sentence:1} [1]",
        "- {sentence:2} [2][7]",  # 7 names no input of this step
        "- {sentence:3} [{fake_chunk}]",  # a chunk id no input has
        "- {sentence:1} [3]",  # a real input that does not say it
        "- A claim that cites nothing at all about the game.",
        "- {sentence:3} [ch_a01p000]",  # an input's own chunk id counts as its ref
    ]), "piece_chars": 9}])
    model = engine(url)
    points = model.map(passages, Focus("summary"), 8)
    assert [point.chunk_ids for point in points] == [("ch_a00p000",), ("ch_a00p001",), ("ch_a01p000",)]
    assert model.last_dropped.markers == 3 and model.last_dropped.points == 3
    assert all(point.quotes[0] in passage.text for point, passage in zip(points, passages))
    assert points[0].text == passages[0].text.split(". ")[0] + "." and points[0].resource_id == "Super Bowl 50"
    request = json.loads(log.read_text().splitlines()[0])
    assert request["model"] == "fake-model" and request["stream"] is True
    system, user = request["messages"]
    assert "at most 8 points" in system["content"] and "untrusted" in system["content"]
    inputs = json.loads(user["content"])["inputs"]
    assert [item["ref"] for item in inputs] == [1, 2, 3] and inputs[0]["text"] == passages[0].text


def test_reduce_cites_every_chunk_of_the_points_it_names(fake_server: Script, passages: list[Passage]) -> None:
    first, second = (Point(p.text.split(". ")[0] + ".", (p.chunk_id,), p.resource_id) for p in passages[:2])
    merged = Point("Two chunks said this together.", ("ch_x", "ch_y"), "Other", quotes=("passage x", "passage y"))
    url, _ = fake_server([{"text": "- {sentence:1} [1][2]\n- {sentence:3} [3][9]\n- Nothing here supports this claim [1]"}])
    model = engine(url)
    points = model.reduce([Summary([first, second], ()), Summary([merged], ())], Focus("briefing", "the final score"), 12)
    assert len(points) == 2
    assert points[0].chunk_ids == ("ch_a00p000",) and points[0].quotes == (first.text,)  # [2] does not support it
    assert points[1].chunk_ids == ("ch_x", "ch_y") and points[1].quotes == ("passage x", "passage y")
    assert model.last_dropped.markers == 3 and model.last_dropped.points == 1


def test_no_more_points_than_asked(fake_server: Script, passages: list[Passage]) -> None:
    url, _ = fake_server([{"text": "\n".join(["- {sentence:1} [1]", "- {sentence:2} [2]", "- {sentence:3} [3]"])}])
    assert len(engine(url).map(passages, Focus(), 2)) == 2


@pytest.mark.parametrize(("status", "code"), [(503, "LLM_UNAVAILABLE"), (400, "LLM_REJECTED")])
def test_a_failing_endpoint_is_a_coded_error(fake_server: Script, passages: list[Passage], status: int, code: str) -> None:
    url, _ = fake_server([{"status": status}])
    with pytest.raises(PipelineError) as raised:
        engine(url).map(passages, Focus(), 4)
    assert raised.value.code == code
