"""The default answer engine: offline, deterministic, and unable to say anything a source does not.

It searches the notebook with the question (a knowledge-mode turn searches the notebook's notes
first, and its documents only when the notes' passages do not answer), splits the best chunks
into sentences and quotes the sentences that share the most (and the rarest) content terms with
the question. Term weights are IDF over the retrieved chunks, so a word found in every retrieved
chunk (the notebook's topic) counts little, and a question word found in *none* of them weighs
the most: its absence is the clearest sign that the sources do not answer the question. A sentence's score is that weighted
coverage of the question, plus a small bonus for the retrieval rank of its chunk (the hybrid search
saw more than single words: phrases and character n-grams). Chunks of a reference list (marked by
the extractor) are never quoted, nor are captions and table-of-contents lines: a bibliography
entry, a figure's label or a page number is not a claim of the source. A chunk that does not
mention a name the question uses (in its text or among its document's names; a name of several
words by its last, where the evidence writes it in full) is not quoted either: "Boeing's tax rate"
is not answered by another company's (``pipeline.answering.names``).
An initialism of the question ("CEO") counts as found where capitalised words spell it out
("Chief Executive Officer", ``pipeline.answering.initialisms``).

The answer is refused (status ``no_evidence``) when even the best sentence covers too little of
the question: quoting a loosely related sentence would look like an answer without being one.
Thresholds were chosen on a development split of SQuAD v1.1 dev (``bench/answerability.py``).

With a sentence model configured (``GNOSI_EMBEDDER=minilm``) the engine also asks it how close
each of the best few sentences is to the question, and refuses what passes the term thresholds
but means something else (``SemanticGate``): words say whether a sentence shares the question's
vocabulary, the model whether it is about the same thing.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import regex

from pipeline.answering.initialisms import initialisms_in, spelled_out
from pipeline.answering.names import QuestionNames
from pipeline.answering.question_types import can_answer, expected_answer
from pipeline.answering.sentences import content_terms, sentence_spans
from pipeline.answering.tools import MAX_QUERY_CHARS, SEARCH_KNOWLEDGE, SEARCH_NOTEBOOK
from pipeline.answering.types import (
    AnswerEvent,
    EvidenceItem,
    ToolRegistry,
    citation_event,
    done_event,
    token_event,
    tool_event,
    tool_started_event,
    until_stopped,
)
from pipeline.extractors.reference_lists import REFERENCES
from pipeline.textnorm import fold, words

NO_EVIDENCE_TEXT = "The sources in this notebook do not answer this question."

# How close each sentence is to the question (cosine of sentence vectors), in the sentences' order.
Similarity = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class Quote:
    """A chosen sentence: ``text`` is exactly ``evidence.text[start:end]``.

    ``coverage`` is the IDF-weighted share of the question's terms in the sentence, ``support``
    the plain share of the question's terms found anywhere in the sentence's chunk or in its
    document's title (a filing's table row does not repeat the company's name). With the title:
    FinanceBench 7 → 9 of 48 first citations on a gold page (13 → 14 answered); SQuAD's
    ``bench/answerability.py`` test split 0.704 → 0.707 right, 0.932 → 0.931 refused.
    """

    evidence: EvidenceItem
    start: int
    end: int
    score: float
    coverage: float
    support: float

    @property
    def text(self) -> str:
        return self.evidence.text[self.start : self.end]


@dataclass(frozen=True)
class ExtractiveSettings:
    """Knobs of sentence selection; the defaults are the calibrated ones.

    A quote needs ``coverage >= min_coverage`` and ``support >= min_support`` (see ``Quote``):
    on SQuAD, the chunk-level share separates questions about the notebook from questions about
    other documents best, while the sentence-level floor stops quoting a sentence that merely
    sits in a relevant chunk. ``rank_bonus`` is added to the sentence score of the top chunk,
    divided by (1 + rank) for the others. A further sentence is quoted only when its score
    reaches ``follow_ratio`` of the best one.
    """

    search_limit: int = 8
    max_sentences: int = 3
    min_coverage: float = 0.25
    min_support: float = 0.55
    rank_bonus: float = 0.1
    follow_ratio: float = 0.85
    min_sentence_terms: int = 3
    # A "when" question is answered only by a sentence with a time expression, a "how many/much"
    # one only by a sentence with a quantity (pipeline.answering.question_types).
    typed_answers: bool = True


@dataclass(frozen=True)
class SemanticGate:
    """The refusal test when a sentence model is at hand: of the ``candidates`` best-scored
    sentences, quote those that pass the term thresholds and whose similarity to the question
    reaches ``min_similarity``. Measured with ``bench/answerability.py --similarity minilm
    --stride 4`` (SQuAD, all-MiniLM-L6-v2), on the test split: refusals of absent facts 0.917 →
    0.958, right answers 0.702 → 0.701. Lower term floors with a higher similarity (coverage 0.2,
    support 0.45, similarity 0.4) answered more (right 0.734, refused 0.951), but quoted loosely
    related sentences for absent facts on a one-document notebook, where every question shares
    its words (``tests/unit/test_answering_extractive.py``'s DMCA cases): a wrong answer with a
    citation is worse than a refusal. Five candidates bound the cost: one model call of six
    short texts per answer."""

    min_similarity: float = 0.3
    candidates: int = 5
    # The similarity also orders the candidates: each one's score plus this share of it. Same
    # bench, same split, weight 0 (by score alone) against 1: right answers 0.701 → 0.715 with the
    # same refusals (dev 0.707 → 0.723); 0.5 and 1.5 did no better on dev in a scratch grid, and
    # score times similarity less well (the first candidate in a gold chunk 0.825 against 0.833).
    rerank_weight: float = 1.0

    def reranked(self, quotes: Sequence[Quote], similarities: Sequence[float]) -> list[tuple[Quote, float]]:
        """Each quote with its similarity, best combined score first (stable: ties keep their order)."""
        combined = [
            (replace(quote, score=quote.score + self.rerank_weight * close), close)
            for quote, close in zip(quotes, similarities, strict=True)
        ]
        return sorted(combined, key=lambda pair: -pair[0].score)


class ExtractiveEngine:
    """Answers by quoting evidence sentences, each followed by its ``[chunk_id]`` marker."""

    name = "extractive"

    def __init__(
        self,
        settings: ExtractiveSettings | None = None,
        *,
        similarity: Similarity | None = None,
        gate: SemanticGate | None = None,
    ) -> None:
        self.settings = settings or ExtractiveSettings()
        self.similarity = similarity
        self.gate = gate or SemanticGate()

    def answer(
        self,
        question: str,
        tools: ToolRegistry,
        *,
        history: list[dict[str, Any]] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Iterator[AnswerEvent]:
        """Search, then quote; ``history`` is ignored (each question is answered on its own)."""
        return until_stopped(self._events(question, tools), should_stop)

    def _events(self, question: str, tools: ToolRegistry) -> Generator[AnswerEvent, None, None]:
        arguments = {"query": question[:MAX_QUERY_CHARS], "limit": self.settings.search_limit}
        quotes: list[Quote] = []
        if SEARCH_KNOWLEDGE in tools:
            hits = yield from self._search(tools, SEARCH_KNOWLEDGE, arguments)
            quotes = self._quotes(question, [item for hit in hits for item in hit["passages"]])
        if not quotes:
            quotes = self._quotes(question, (yield from self._search(tools, SEARCH_NOTEBOOK, arguments)))
        if not quotes:
            yield token_event(NO_EVIDENCE_TEXT)
            yield done_event(NO_EVIDENCE_TEXT, "no_evidence", [])
            return
        parts = [f"{quote.text} [{quote.evidence.chunk_id}]" for quote in quotes]
        for position, (part, quote) in enumerate(zip(parts, quotes, strict=True)):
            yield token_event(part if position == 0 else " " + part)
            yield citation_event(quote.evidence.chunk_id, quote.text)
        citations = [{"chunk_id": quote.evidence.chunk_id, "quote": quote.text} for quote in quotes]
        yield done_event(" ".join(parts), "answered", citations)

    @staticmethod
    def _search(tools: ToolRegistry, name: str, arguments: dict[str, Any]) -> Generator[AnswerEvent, None, Any]:
        """Run one search tool between its two ``tool`` events."""
        yield tool_started_event(name, arguments)
        result = tools.call(name, arguments)
        yield tool_event(name, tools.calls[-1].arguments, tools.calls[-1].result_count)
        return result

    def _quotes(self, question: str, evidence: list[EvidenceItem]) -> list[Quote]:
        if self.similarity is None:
            return select_quotes(question, evidence, self.settings)
        return select_similar_quotes(question, evidence, self.settings, self.similarity, self.gate)


def select_quotes(question: str, evidence: list[EvidenceItem], settings: ExtractiveSettings) -> list[Quote]:
    """The sentences to quote, best first; empty when the evidence does not answer ``question``."""
    ranked = ranked_sentences(question, evidence, settings)
    return _choose(ranked, [_sufficient(quote, settings) for quote in ranked], settings)


def select_similar_quotes(
    question: str, evidence: list[EvidenceItem], settings: ExtractiveSettings, similarity: Similarity, gate: SemanticGate
) -> list[Quote]:
    """As ``select_quotes``, with the sentence model's similarity as the refusal test."""
    ranked = _distinct_sentences(ranked_sentences(question, evidence, settings), gate.candidates)
    if not ranked:
        return []
    reranked = gate.reranked(ranked, similarity(question, [quote.text for quote in ranked]))
    passing = [close >= gate.min_similarity and _sufficient(quote, settings) for quote, close in reranked]
    return _choose([quote for quote, _ in reranked], passing, settings)


def _distinct_sentences(ranked: list[Quote], count: int) -> list[Quote]:
    """The first ``count`` different sentences: overlapping chunks repeat a sentence, and a repeat
    would take a slot and be shown to the model twice."""
    distinct: list[Quote] = []
    seen: set[str] = set()
    for quote in ranked:
        if len(distinct) == count:
            break
        if _key(quote.text) not in seen:
            seen.add(_key(quote.text))
            distinct.append(quote)
    return distinct


def _choose(ranked: list[Quote], passing: list[bool], settings: ExtractiveSettings) -> list[Quote]:
    """The best passing sentence, then those that score close to it, without repeats."""
    chosen: list[Quote] = []
    said: set[str] = set()
    for quote, passes in zip(ranked, passing, strict=True):
        if len(chosen) == settings.max_sentences or chosen and quote.score < settings.follow_ratio * chosen[0].score:
            break
        if passes and _key(quote.text) not in said:
            chosen.append(quote)
            said.add(_key(quote.text))
    return chosen


def ranked_sentences(question: str, evidence: list[EvidenceItem], settings: ExtractiveSettings) -> list[Quote]:
    """Every sentence that may answer ``question`` (the type it asks for, no caption, no reference
    list), best score first, before the refusal thresholds (``bench/answerability.py`` sets those)."""
    question_terms = set(content_terms(question))
    evidence = [item for item in _distinct(evidence) if item.locator.get("section") != REFERENCES]
    if not question_terms or not evidence:
        return []
    initialisms = initialisms_in(question)
    in_order = [content_terms(item.text) for item in evidence]
    written = [set(terms) for terms in in_order]
    # A spelled-out initialism covers the question, but does not mention a name ("IBM" is no
    # "Independent Board Member"): the name rule reads the chunk's own words.
    chunk_terms = [terms | spelled_out(item.text, initialisms) for terms, item in zip(written, evidence, strict=True)]
    weights = _idf(question_terms, chunk_terms)
    total = math.fsum(weights.values())
    wanted = expected_answer(question) if settings.typed_answers else None
    asked = frozenset(fold(word) for word in words(question))
    names = QuestionNames.of(question, evidence, in_order)
    candidates: list[tuple[float, int, int, Quote]] = []
    for rank, (item, words_of_chunk, terms_of_chunk) in enumerate(zip(evidence, written, chunk_terms, strict=True)):
        if names and item.names and not names.mentions(words_of_chunk.union(content_terms(item.names))):
            continue
        prose = item.locator.get("table") is None
        named = terms_of_chunk.union(content_terms(item.title or ""))
        support = len(question_terms & named) / len(question_terms)
        bonus = settings.rank_bonus / (1 + rank)
        for start, end in sentence_spans(item.text, headings=prose):
            sentence = item.text[start:end]
            terms = content_terms(sentence)
            if len(terms) < settings.min_sentence_terms or not_a_claim(sentence) or (prose and a_heading(sentence)):
                continue
            if not can_answer(sentence, wanted, asked):
                continue
            covered = question_terms.intersection([*terms, *spelled_out(sentence, initialisms)])
            coverage = math.fsum(weights[term] for term in covered) / total
            quote = Quote(item, start, end, coverage + bonus, coverage, support)
            candidates.append((-quote.score, rank, start, quote))
    candidates.sort(key=lambda candidate: candidate[:3])
    return [quote for _, _, _, quote in candidates]



# A figure or table caption names what a figure shows, and a table-of-contents line where a
# section is: quoted as an answer, either passes a label off as a statement.
_CAPTION = regex.compile(
    r"^(?:figure|fig\.|table|tab\.|chart|exhibit|abbildung|abb\.|tabelle|grafik)\s*[0-9IVX]+[a-z]?\s*[.:|\u2013\u2014-]",
    regex.IGNORECASE,
)
_DOTTED_LEADER = regex.compile(r"(?:\.\s?){4,}|\u2026{2,}")  # "Introduction ........ 5" (a sentence may end mid-leader)


def not_a_claim(sentence: str) -> bool:
    """A caption or a table-of-contents line: never quoted as an answer."""
    return bool(_CAPTION.match(sentence.lstrip()) or _DOTTED_LEADER.search(sentence))


def a_heading(sentence: str) -> bool:
    """Words in capitals or capitalised, none starting in lower case: a title block or a heading
    ("1 THE DIGITAL MILLENNIUM COPYRIGHT ACT OF 1998 U.S. Copyright Office Summary December 1998
    INTRODUCTION"), never quoted as an answer. Text in a script without case is never one; nor is
    a table's row ("State / Territory: Alabama | Handgun: 23,022 | …"), whose labels look the
    same: the engine asks this of prose chunks only."""
    initials = [word[0] for word in words(sentence) if word[0].isalpha()]
    if any(not (initial.isupper() or initial.islower()) for initial in initials):
        return False
    return len(initials) >= 2 and not any(initial.islower() for initial in initials)


def _sufficient(quote: Quote, settings: ExtractiveSettings) -> bool:
    return quote.coverage >= settings.min_coverage and quote.support >= settings.min_support


def _idf(question_terms: set[str], chunk_terms: list[set[str]]) -> dict[str, float]:
    """IDF of each question term over the retrieved chunks (a term in none of them weighs most)."""
    count = len(chunk_terms)
    return {
        term: math.log(1 + count / (0.5 + sum(term in terms for terms in chunk_terms)))
        for term in sorted(question_terms)
    }


def _distinct(evidence: list[EvidenceItem]) -> list[EvidenceItem]:
    seen: set[str] = set()
    distinct = []
    for item in evidence:
        if item.chunk_id not in seen:
            seen.add(item.chunk_id)
            distinct.append(item)
    return distinct


def _key(sentence: str) -> str:
    """Identity of a sentence across overlapping chunks: its folded words."""
    return " ".join(fold(sentence).split())
