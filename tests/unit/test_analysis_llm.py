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
        "- {sentence:3} [{fake_chunk}]",  # a chunk id: inputs are numbered, ids never shown
        "- {sentence:1} [3]",  # a real input that does not say it
        "- A claim that cites nothing at all about the game.",
        "- {sentence:3} [0][3]",
        "- " + "A sentence far too long to be one point of a summary [1]. " * 8,
    ]), "piece_chars": 9}])
    model = engine(url)
    points = model.map(passages, Focus("summary"), 8)
    assert [point.chunk_ids for point in points] == [("ch_a00p000",), ("ch_a00p001",), ("ch_a01p000",)]
    assert model.last_dropped.markers == 5 and model.last_dropped.points == 4
    assert all(point.quotes[0] in passage.text for point, passage in zip(points, passages))
    assert points[0].text == passages[0].text.split(". ")[0] + "." and points[0].resource_id == "Super Bowl 50"
    request = json.loads(log.read_text().splitlines()[0])
    assert request["model"] == "fake-model" and request["stream"] is True and request["max_tokens"] >= 8 * 100
    system, user = request["messages"]
    assert "at most 8 points" in system["content"] and "untrusted" in system["content"]
    inputs = json.loads(user["content"])["inputs"]
    assert [item["ref"] for item in inputs] == [1, 2, 3] and inputs[0]["text"] == passages[0].text
    assert inputs[0]["source"] == "Super Bowl 50" and "chunk_id" not in inputs[0]


def test_a_reference_list_is_never_sent_nor_cited(fake_server: Script, passages: list[Passage]) -> None:
    listed = Passage("ch_refs", "Super Bowl 50", "Smith, J. (2016). Attendance figures of stadium concerts. J. Sport.", 9,
                     {"section": "references"})
    url, log = fake_server([{"text": "- Attendance figures of stadium concerts were studied [1]\n- {sentence:1} [1]"}])
    points = engine(url).map([listed, passages[0]], Focus(), 4)
    assert [point.chunk_ids for point in points] == [("ch_a00p000",)]
    assert "Smith" not in log.read_text()


def test_reduce_checks_every_claim_against_the_chunks_passages_not_a_lower_claim(
    fake_server: Script, passages: list[Passage]
) -> None:
    """A lower point's wording may say more than its chunk: a reduce claim must be supported by the
    passages its chunks hold, and cites only those that support it."""
    first, second = (Point(p.text.split(". ")[0] + ".", (p.chunk_id,), p.resource_id) for p in passages[:2])
    embellished = Point("The committee approved the budget in March, which caused protests and the mayor's resignation.",
                        ("ch_x", "ch_y"), "Council", quotes=("The committee approved the budget in March after a long debate.",
                                                             "Protests followed the vote on the budget in March."))
    url, _ = fake_server([{"text": "\n".join([
        "- {sentence:1} [1][2]",  # [2] does not say what [1] says
        "- Widespread protests forced the mayor's resignation [3].",  # only the lower claim says it
        "- The committee approved the budget in March after a long debate [3][9].",
    ])}])
    model = engine(url)
    points = model.reduce([Summary([first, second], ()), Summary([embellished], ())], Focus("briefing", "the budget"), 12)
    assert [point.chunk_ids for point in points] == [("ch_a00p000",), ("ch_x",)]
    assert points[0].quotes[0].rstrip(".") == first.text.rstrip(".")  # a located quote ends at its last letter
    assert points[1].quotes[0] in embellished.quotes[0]
    assert model.last_dropped.markers == 3 and model.last_dropped.points == 1


def test_no_more_points_than_asked(fake_server: Script, passages: list[Passage]) -> None:
    url, _ = fake_server([{"text": "\n".join(["- {sentence:1} [1]", "- {sentence:2} [2]", "- {sentence:3} [3]"])}])
    assert len(engine(url).map(passages, Focus(), 2)) == 2


def test_an_answer_without_one_grounded_point_is_a_bad_response(fake_server: Script, passages: list[Passage]) -> None:
    url, _ = fake_server([{"text": "Here are the points (1), (2)."}])
    with pytest.raises(PipelineError) as raised:
        engine(url).map(passages, Focus(), 4)
    assert raised.value.code == "LLM_BAD_RESPONSE"


@pytest.mark.parametrize(("status", "code"), [(503, "LLM_UNAVAILABLE"), (400, "LLM_REJECTED")])
def test_a_failing_endpoint_is_a_coded_error(fake_server: Script, passages: list[Passage], status: int, code: str) -> None:
    url, _ = fake_server([{"status": status}])
    with pytest.raises(PipelineError) as raised:
        engine(url).map(passages, Focus(), 4)
    assert raised.value.code == code
