"""A "when" question is answered by a sentence with a time, a "how many" one by a sentence with a
quantity, a "who" or "where" one by a sentence naming something the question does not; other
questions are not typed."""
from __future__ import annotations

import pytest

from pipeline.answering.extractive import ExtractiveSettings, select_quotes
from pipeline.answering.question_types import can_answer, expected_answer
from pipeline.answering.types import EvidenceItem


@pytest.mark.parametrize(("question", "wanted"), [
    ("When was the DMCA signed into law?", "time"),
    ("In what year did Congress pass the Act?", "time"),
    ("What year did the WIPO treaties come into force?", "time"),
    ("How many treaties does the DMCA implement?", "quantity"),
    ("How much did the project cost?", "quantity"),
    ("What percentage of the vote did he win?", "quantity"),
    ("Who signed the DMCA?", "name"),
    ("Where was the treaty negotiated?", "name"),
    ("Which company registered the domain?", "name"),
    ("What is a trace tree?", None),
    ("Why are hot loops blacklisted?", None),
])
def test_the_question_says_what_kind_of_answer_it_wants(question: str, wanted: str | None) -> None:
    assert expected_answer(question) == wanted


def test_sentences_qualify_by_their_expressions() -> None:
    assert can_answer("It was signed on October 28, 1998.", "time")
    assert can_answer("It happened in the 1990s.", "time")
    assert not can_answer("It was signed by the President after a long debate.", "time")
    assert can_answer("The DMCA implements two WIPO treaties.", "quantity")
    assert can_answer("Costs rose by 12%.", "quantity")
    assert not can_answer("The DMCA implements the WIPO treaties.", "quantity")
    assert can_answer("Anything goes.", None)
    asked = frozenset({"who", "signed", "the", "dmca"})
    assert can_answer("The DMCA was signed by President Clinton.", "name", asked)
    assert not can_answer("The DMCA was signed after a long debate.", "name", asked), "its only name is the question's"
    assert can_answer("Clinton signed the DMCA into law in 1998.", "name", asked), "a name may open the sentence"
    assert can_answer('It was signed by "Bill".', "name", asked)
    assert not can_answer("The DMCA's text was signed late.", "name", asked), "a possessive of the question's name"
    assert not can_answer("In the end I signed it.", "name", asked), "stop words and I are no names"


def test_a_when_question_is_answered_by_the_sentence_with_the_date() -> None:
    text = (
        "The Digital Millennium Copyright Act was signed into law by President Clinton after a long debate in Congress. "
        "Congress passed the Digital Millennium Copyright Act on October 12, 1998, after two years of hearings."
    )
    evidence = [EvidenceItem("ch_1", "r", "dmca", "s", text, {"page": 1}, 1.0)]
    question = "When was the Digital Millennium Copyright Act signed into law by President Clinton?"
    typed = select_quotes(question, evidence, ExtractiveSettings())
    assert typed and all("1998" in quote.text for quote in typed)
    untyped = select_quotes(question, evidence, ExtractiveSettings(typed_answers=False))
    assert "1998" not in untyped[0].text, "without the type, the sentence sharing most words wins"


def test_a_how_many_question_without_a_quantity_in_the_evidence_is_refused() -> None:
    text = "The legislation implements the World Intellectual Property Organization treaties on copyright."
    evidence = [EvidenceItem("ch_1", "r", "dmca", "s", text, {"page": 1}, 1.0)]
    question = "How many World Intellectual Property Organization treaties does the legislation implement?"
    assert select_quotes(question, evidence, ExtractiveSettings()) == []
    assert select_quotes(question, evidence, ExtractiveSettings(typed_answers=False))
