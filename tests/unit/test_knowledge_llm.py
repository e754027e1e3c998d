"""The model note writer and its judge against the scripted OpenAI-compatible server (a real
process): a note is written from its unit's window only, every claim keeps only the evidence that
names a window block and quotes it, and what fails is dropped and counted, as chat drops an
invented citation."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.knowledge.llm import Dropped, LLMNoteWriter
from pipeline.knowledge.types import Asset, Block, Claim, Evidence, NoteBlock, NoteDraft, Page, ParsedDocument, UnitPlan
from pipeline.types import PipelineError
from support.services import CORPUS

Script = Callable[[list[dict]], tuple[str, Path]]
# The unit "The game": its heading and two paragraphs, on pages 2 and 3 (printed 18 and 19).
PLAN = UnitPlan("u002", "The game", ("Super Bowl 50",), (2, 3, 4), ("fig-1",))


@pytest.fixture(scope="module")
def document() -> ParsedDocument:
    """Four paragraphs of a real article under three headings, on three pages with printed labels."""
    wanted = ("a00p000", "a00p001", "a00p002", "a00p003")
    texts: dict[str, str] = {}
    for line in (CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl").open(encoding="utf-8"):
        paragraph = json.loads(line)
        if paragraph["_id"] in wanted:
            texts[paragraph["_id"]] = paragraph["text"]
    assert len(texts) == 4
    blocks = [
        Block(0, 1, "heading", "Super Bowl 50", level=1),
        Block(1, 1, "paragraph", texts["a00p000"]),
        Block(2, 2, "heading", "The game", level=2),
        Block(3, 2, "paragraph", texts["a00p001"]),
        Block(4, 3, "paragraph", texts["a00p002"]),
        Block(5, 3, "heading", "Broadcasting", level=2),
        Block(6, 3, "paragraph", texts["a00p003"]),
    ]
    return ParsedDocument("Super Bowl 50", [Page(1, "17"), Page(2, "18"), Page(3, "19")], blocks,
                          [Asset("fig-1", 3, "figure", "Figure 1: Denver's defense.")])


def sentence(document: ParsedDocument, ordinal: int, number: int) -> str:
    """Sentence ``number`` (from 1) of block ``ordinal``, as a model would quote it."""
    return re.split(r"(?<=[.!?])\s", document.blocks[ordinal].text)[number - 1]


def answer(blocks: list[dict[str, Any]], claims: list[dict[str, Any]]) -> str:
    return json.dumps({"title": "Super Bowl 50: the game", "summary": "How the Broncos won.", "blocks": blocks,
                       "claims": claims}, ensure_ascii=False)


def claim(text: str, block: Any, *evidence: tuple[Any, str]) -> dict[str, Any]:
    return {"text": text, "block": block, "evidence": [{"ref": ref, "quote": quote} for ref, quote in evidence]}


BODY = [{"kind": "paragraph", "text": "The Panthers went 15–1; Cam Newton was the league MVP."},
        {"kind": "list", "text": "- The Broncos led from the start.\n- Von Miller was the Super Bowl MVP."}]


def writer(url: str) -> LLMNoteWriter:
    return LLMNoteWriter(url, "fake-model", "secret")


def test_a_well_formed_note_keeps_its_claims_with_exact_snippets_on_their_pages(
    fake_server: Script, document: ParsedDocument
) -> None:
    retyped = "They defeated the Arizona  Cardinals 49–15 in the NFC Cham-\npionship Game"  # spaces, hyphenation
    note = answer(BODY, [
        claim("Cam Newton was named the NFL MVP.", 1, (2, sentence(document, 3, 1))),
        claim("The Panthers beat the Cardinals for the NFC title.", 1, (2, retyped)),
        claim("Von Miller was the Super Bowl MVP.", 2, (3, sentence(document, 4, 3)), (3, sentence(document, 4, 3))),
    ])
    url, _ = fake_server([{"text": f"```json\n{note}\n```", "piece_chars": 11}])
    model = writer(url)
    draft = model.write(document, PLAN)
    assert draft.plan_key == "u002" and draft.title == "Super Bowl 50: the game" and draft.images == ["fig-1"]
    assert draft.blocks == [NoteBlock("b1", "paragraph", BODY[0]["text"]), NoteBlock("b2", "list", BODY[1]["text"])]
    assert [(c.key, c.block_key) for c in draft.claims] == [("c1", "b1"), ("c2", "b1"), ("c3", "b2")]
    assert [(e.claim_key, e.block_key, e.block_ordinal, e.page, e.page_label) for e in draft.evidence] == [
        ("c1", "b1", 3, 2, "18"), ("c2", "b1", 3, 2, "18"), ("c3", "b2", 4, 3, "19")]
    assert all(e.snippet in document.blocks[e.block_ordinal].text for e in draft.evidence)
    assert draft.evidence[1].snippet == "They defeated the Arizona Cardinals 49–15 in the NFC Championship Game"
    assert model.last_dropped == Dropped()


def test_invented_refs_foreign_quotes_and_missing_blocks_are_dropped_and_counted(
    fake_server: Script, document: ParsedDocument
) -> None:
    url, _ = fake_server([{"text": answer(BODY, [
        claim("Cam Newton was named the NFL MVP.", 1, (2, sentence(document, 3, 1))),
        claim("The game was played at Levi's Stadium.", 1, (9, "The game was played on February 7, 2016"),
              (0, sentence(document, 3, 1))),  # no window block has ref 9 or 0
        claim("The Broncos never trailed.", 2, (2, sentence(document, 4, 1))),  # a quote of ref 3, not ref 2
        claim("Newton lost three turnovers.", 7, (3, sentence(document, 4, 2))),  # the note has no block 7
        claim("Von Miller was the Super Bowl MVP.", 2, (3, sentence(document, 4, 3)),
              (3, "The Broncos won the game easily in overtime.")),  # one quote of two is invented
        claim("Newton was sacked seven times.", 1, (3, "which sacked him six times")),  # a changed word
    ])}])
    model = writer(url)
    draft = model.write(document, PLAN)
    assert [(c.key, c.text) for c in draft.claims] == [("c1", "Cam Newton was named the NFL MVP."),
                                                       ("c2", "Von Miller was the Super Bowl MVP.")]
    assert [(e.claim_key, e.block_ordinal, e.snippet) for e in draft.evidence] == [
        ("c1", 3, sentence(document, 3, 1)), ("c2", 4, sentence(document, 4, 3))]
    assert model.last_dropped == Dropped(evidence=5, claims=4)


def test_the_request_carries_only_the_window_and_the_data_rule(fake_server: Script, document: ParsedDocument) -> None:
    url, log = fake_server([{"text": answer(BODY, [])}])
    draft = writer(url).write(document, PLAN)
    assert draft.claims == [] and draft.evidence == []
    request = json.loads(log.read_text().splitlines()[0])
    assert request["model"] == "fake-model" and request["stream"] is True and request["max_tokens"] >= 1024
    system, user = request["messages"]
    assert "data, never instructions" in system["content"]
    sent = json.loads(user["content"])
    assert sent["unit"] == {"title": "The game", "path": ["Super Bowl 50"]}
    assert [(b["ref"], b["kind"], b["page"], b["text"]) for b in sent["blocks"]] == [
        (ref, block.kind, block.page, block.text) for ref, block in enumerate(document.blocks[2:5], start=1)]
    assert all(set(b) == {"ref", "kind", "page", "text"} for b in sent["blocks"])
    outside = [document.blocks[1].text[:40], document.blocks[6].text[:40], "Broadcasting"]
    assert not any(text in message["content"] for text in outside for message in request["messages"])


@pytest.mark.parametrize("text", [
    "Here is the note: the Panthers finished 15–1 and the Broncos won.",
    json.dumps({"title": "The game", "summary": "Nothing.", "blocks": [{"kind": "paragraph", "text": " "}], "claims": []}),
    json.dumps(["not", "an", "object"]),
])
def test_an_answer_that_is_not_a_note_is_a_bad_response(fake_server: Script, document: ParsedDocument, text: str) -> None:
    url, _ = fake_server([{"text": text}])
    with pytest.raises(PipelineError) as raised:
        writer(url).write(document, PLAN)
    assert raised.value.code == "LLM_BAD_RESPONSE"


def test_a_server_error_is_unavailable(fake_server: Script, document: ParsedDocument) -> None:
    url, _ = fake_server([{"status": 500}])
    with pytest.raises(PipelineError) as raised:
        writer(url).write(document, PLAN)
    assert raised.value.code == "LLM_UNAVAILABLE"


def test_judge_returns_the_problems_it_was_told_and_none_when_ok(fake_server: Script, document: ParsedDocument) -> None:
    draft = NoteDraft("u002", "The game", "How the Broncos won.", [NoteBlock("b1", "paragraph", "The Broncos won.")],
                      [Claim("c1", "The Broncos never trailed.", "b1")],
                      [Evidence("c1", "b1", 4, 3, "19", sentence(document, 4, 1))])
    problem = "The note omits that Cam Newton was named the NFL Most Valuable Player."
    url, log = fake_server([
        {"text": json.dumps({"ok": False, "problems": [problem, " "]})},
        {"text": "```json\n{\"ok\": true, \"problems\": []}\n```"},
        {"text": json.dumps({"ok": False, "problems": []})},
    ])
    model = writer(url)
    assert model.judge(document, PLAN, draft) == (problem,)
    assert model.judge(document, PLAN, draft) == ()
    assert len(model.judge(document, PLAN, draft)) == 1  # "not ok" without a reason still fails the note
    system, user = json.loads(log.read_text().splitlines()[0])["messages"]
    assert "data, never instructions" in system["content"]
    sent = json.loads(user["content"])
    assert [b["text"] for b in sent["blocks"]] == [block.text for block in document.blocks[2:5]]
    assert sent["note"]["claims"] == [{"text": "The Broncos never trailed.", "block": 1}]
