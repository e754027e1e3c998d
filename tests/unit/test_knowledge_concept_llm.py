"""The model concept engine against the scripted OpenAI-compatible server (a real process), on the
notes of test_knowledge_concepts (real SQuAD text): a model's decisions name only what it was
shown, by number, and code drops every decision that names something else; a module's points
each restate one claim that supports them and carry that claim's evidence, and an invented or
unsupported point is dropped and counted, as chat drops an invented citation; a module its judge
refuses is not published."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.knowledge.concept_llm import LLMConceptEngine
from pipeline.knowledge.concepts import Candidate, ContributionInput, claim_points, validate
from pipeline.types import PipelineError
from unit.test_knowledge_concepts import shared, source_a, source_b, source_c

Script = Callable[[list[dict]], tuple[str, Path]]
JUDGE_OK = {"match": "You check one module", "text": '{"ok": true, "problems": []}'}
COMPLEXITY = Candidate("concept-complexity", "Computational problem", ("computational problems",), ("overview", "examples"))
OIL = Candidate("concept-oil", "Oil crisis", (), ("overview",))


def engine(url: str) -> LLMConceptEngine:
    return LLMConceptEngine(url, "fake-model", "secret")


def requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_decisions_name_only_what_the_model_was_shown_and_code_checks_them(fake_server: Script) -> None:
    a = source_a()  # blocks b1..b5; b5 (an example) states no claim
    decisions = {"decisions": [
        {"kind": "supplement", "concept": 1, "module": "Overview", "blocks": [1, 2, 5, 9]},
        {"kind": "new_concept", "name": "Decision problems", "module": "overview", "module_title": "Overview", "blocks": [3]},
        {"kind": "supplement", "concept": 7, "module": "overview", "blocks": [1]},
        {"kind": "new_module", "concept": 1, "module": "history", "blocks": [4]},
    ]}
    conflict = {"decisions": [{"kind": "conflict", "concept": 2, "reason": "The note says the crisis began in 1974."}]}
    url, log = fake_server([{"text": "```json\n" + json.dumps(decisions) + "\n```", "piece_chars": 9},
                            {"text": json.dumps(conflict)}])
    model = engine(url)
    kept, problems = validate(a, [COMPLEXITY, OIL], model.decide(a, [COMPLEXITY, OIL], shared(source_b())))

    assert [(d.kind, d.concept_id, d.module_key) for d in kept] == [
        ("supplement", "concept-complexity", "overview"), ("new_concept", None, "overview")]
    assert kept[0].block_keys == ("b1", "b2"), "block 9 does not exist and block 5 carries no evidence"
    assert kept[1].concept_name == "Decision problems" and kept[1].block_keys == ("b3",)
    assert any("no block #9" in p for p in problems) and any("b5 carries no evidence" in p for p in problems)
    assert any("decision 3" in p and "not a candidate" in p for p in problems), problems
    assert "1 decisions beyond 3 left out" in problems, "at most three decisions a note"
    flagged, _ = validate(a, [COMPLEXITY, OIL], model.decide(a, [COMPLEXITY, OIL], set()))
    assert [(d.kind, d.concept_id, d.reason) for d in flagged] == [("conflict", "concept-oil", "The note says the crisis began in 1974.")]

    sent = json.loads(requests(log)[0]["messages"][1]["content"])
    assert [c["ref"] for c in sent["candidates"]] == [1, 2] and "concept-complexity" not in json.dumps(sent), "no id is shown"
    assert [b["evidence"] for b in sent["note"]["blocks"]] == [True, True, True, True, False]
    assert requests(log)[0]["max_tokens"] <= 1000


def test_a_module_keeps_each_point_that_its_claim_supports_with_that_claims_evidence(fake_server: Script) -> None:
    a, b = source_a(), source_b()
    inputs = [ContributionInput("k-a", a.note_version_id, a.source_version_id, ("b1", "b2"), a),
              ContributionInput("k-b", b.note_version_id, b.source_version_id, ("b1",), b)]
    first_a, first_b = claim_points(inputs[0])[0][1], claim_points(inputs[1])[0][1]
    points = {"points": [
        {"text": "{claim:1}", "ref": 1},
        {"text": "{claim:2}", "ref": 2},
        {"text": "{claim:1}", "ref": 1},  # a second point on one claim
        {"text": "The Broncos won Super Bowl 50 in Santa Clara.", "ref": 3},  # unsupported by its claim
        {"text": "A claim that was never offered.", "ref": 99},
        {"text": "No number at all."},
    ]}
    url, log = fake_server([{"text": json.dumps(points)}, JUDGE_OK])
    model = engine(url)
    body = model.build_module("Overview", inputs, concept="Computational problem")

    assert [p["text"] for p in body] == [first_a["text"], first_b["text"]], "claims offered in turns: A's first, then B's"
    assert [p["note_id"] for p in body] == [a.note_id, b.note_id]
    assert all(p["evidence"] and p["evidence"] == src["evidence"] for p, src in zip(body, (first_a, first_b), strict=True))
    assert model.last_dropped == 4
    sent = json.loads(requests(log)[0]["messages"][1]["content"])
    assert sent["concept"] == "Computational problem" and {c["source"] for c in sent["claims"]} == {1, 2}
    assert model.judge_module("Overview", inputs, body, concept="Computational problem") == ()
    judged = json.loads(requests(log)[1]["messages"][1]["content"])
    assert judged["points"] == [{"ref": 1, "text": first_a["text"]}, {"ref": 2, "text": first_b["text"]}], "the judge reads what was kept"


def test_a_module_judge_says_what_is_wrong_or_its_verdict_cannot_be_read(fake_server: Script) -> None:
    c = source_c()
    inputs = [ContributionInput("k-c", c.note_version_id, c.source_version_id, ("b1",), c)]
    refusing = {**JUDGE_OK, "text": json.dumps({"ok": False, "problems": ["Point 1 drops the year the crisis began."]})}
    url, _ = fake_server([{"text": json.dumps({"points": [{"text": "{claim:1}", "ref": 1}]})}, refusing])
    model = engine(url)
    body = model.build_module("Overview", inputs, concept="Oil crisis")
    assert body and model.judge_module("Overview", inputs, body, concept="Oil crisis") == ("Point 1 drops the year the crisis began.",)
    unreadable = {**JUDGE_OK, "text": '{"verdict": "fine"}'}
    url, _ = fake_server([{"text": json.dumps({"points": [{"text": "{claim:1}", "ref": 1}]})}, unreadable])
    with pytest.raises(PipelineError) as raised:
        engine(url).judge_module("Overview", inputs, body, concept="Oil crisis")
    assert raised.value.code == "LLM_BAD_RESPONSE", "nothing is published unjudged"


def test_a_restatement_is_kept_when_the_claims_words_support_it(fake_server: Script) -> None:
    c = source_c()
    inputs = [ContributionInput("k-c", c.note_version_id, c.source_version_id, ("b1",), c)]
    claim = claim_points(inputs[0])[0][1]
    restated = "The 1973 oil crisis began in October 1973, when OAPEC proclaimed an oil embargo."
    url, _ = fake_server([{"text": json.dumps({"points": [{"text": restated, "ref": 1}]})}, JUDGE_OK])
    body = engine(url).build_module("Overview", inputs, concept="Oil crisis")
    assert "embargo" in claim["text"] and [p["text"] for p in body] == [restated]
    assert body[0]["claim_key"] == claim["claim_key"] and body[0]["evidence"] == claim["evidence"]


@pytest.mark.parametrize("turn, code", [({"text": "I would supplement the first concept."}, "LLM_BAD_RESPONSE"),
                                        ({"status": 503}, "LLM_UNAVAILABLE")])
def test_an_answer_that_cannot_be_read_or_a_model_that_is_down_says_so(fake_server: Script, turn: dict, code: str) -> None:
    url, _ = fake_server([turn])
    with pytest.raises(PipelineError) as raised:
        engine(url).decide(source_a(), [COMPLEXITY], set())
    assert raised.value.code == code
