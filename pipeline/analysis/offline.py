"""The offline analysis engine: no model, deterministic, and every point an exact quote.

Map: from a batch of chunks it quotes the sentences that carry the batch's recurring content (a
sentence's terms weighted by how many of the batch's chunks share them), plus what the analysis
asks for: the instruction's own words, dates for a timeline, contrasts for disagreements,
definitions for a study guide or FAQ, figures for a briefing. Near-repeats are dropped (the same
fact quoted from two overlapping chunks, or from two editions of a document).

Reduce: the points of several summaries compete again, weighed against each other, and a source
already quoted weighs less for each point taken from it, so the result spans the notebook instead
of the loudest document. A point keeps its text and its chunk: the final result cites exactly the
sentence it quotes.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import regex

from pipeline.analysis.types import Focus, Passage, Point, Summary
from pipeline.answering.extractive import not_a_claim
from pipeline.answering.sentences import MAX_SENTENCE_CHARS, content_terms, sentence_spans
from pipeline.extractors.reference_lists import REFERENCES

_YEAR = regex.compile(r"\b(1[0-9]\d\d|20\d\d)s?\b")
_YEAR_OR_DATE = regex.compile(
    rf"{_YEAR.pattern}|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{{1,2}}\b", regex.IGNORECASE
)
_CONTRAST = regex.compile(
    r"\b(?:however|but|whereas|although|though|contrary|contrast|disagree\w*|dispute\w*|contradict\w*|"
    r"unlike|instead|nevertheless|yet|criticis\w*|challeng\w*|argue\w*|object\w*)\b",
    regex.IGNORECASE,
)
_DEFINITION = regex.compile(r"\b(?:is|are|was|were)\s+(?:a|an|the|defined|known|called)\b|\bmeans\b|\brefers to\b", regex.IGNORECASE)
_SENTENCE_END = regex.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")
_FIGURE = regex.compile(r"\d[\d,.]*\s*(?:%|percent|per cent|million|billion|thousand)?")
_KIND_CUES = {"timeline": _YEAR_OR_DATE, "disagreements": _CONTRAST, "study_guide": _DEFINITION, "faq": _DEFINITION, "briefing": _FIGURE}


# Points a map step keeps of its batch, and a reduce step of its summaries (the result's length).
MAP_POINTS = 8
REDUCE_POINTS = 12
# A reduce batch must hold two summaries of the longest sentences, or a level would not shrink.
MIN_BATCH_CHARS = 2 * REDUCE_POINTS * MAX_SENTENCE_CHARS


@dataclass(frozen=True)
class OfflineSettings:
    """``min_terms``: shorter sentences say too little to stand alone; ``repeat_overlap``: two
    sentences sharing this share of their terms say the same thing; ``source_decay``: a source's
    next point weighs this much of the one before (reduce)."""

    min_terms: int = 5
    repeat_overlap: float = 0.6
    source_decay: float = 0.6
    instruction_weight: float = 2.0
    cue_weight: float = 1.0


def map_batch(passages: list[Passage], focus: Focus, points: int, settings: OfflineSettings = OfflineSettings()) -> Summary:
    """The ``points`` sentences of ``passages`` that best carry the batch and the focus."""
    readable = [p for p in passages if p.locator.get("section") != REFERENCES]
    candidates = [
        Point(passage.text[start:end], (passage.chunk_id,), passage.resource_id, 0.0, _order(passage, start))
        for passage in readable
        for start, end in whole_sentences(passage.text)
    ]
    weights = _weights(content_terms(passage.text) for passage in readable)
    chosen = _choose(candidates, weights, focus, points, settings, source_decay=1.0)
    return Summary(chosen, tuple(passage.chunk_id for passage in passages))


def reduce_summaries(summaries: list[Summary], focus: Focus, points: int, settings: OfflineSettings = OfflineSettings()) -> Summary:
    """The ``points`` points of ``summaries`` that best carry them all, spread over their sources."""
    candidates = [point for summary in summaries for point in summary.points]
    weights = _weights(content_terms(point.text) for point in candidates)
    chosen = _choose(candidates, weights, focus, points, settings, source_decay=settings.source_decay)
    return Summary(chosen, tuple(chunk for summary in summaries for chunk in summary.covers))


class OfflineEngine:
    """``map_batch`` and ``reduce_summaries`` as an ``AnalysisEngine``."""

    name = "extractive"

    def __init__(self, settings: OfflineSettings = OfflineSettings()) -> None:
        self.settings = settings

    def map(self, passages: list[Passage], focus: Focus, points: int) -> list[Point]:
        return map_batch(passages, focus, points, self.settings).points

    def reduce(self, summaries: list[Summary], focus: Focus, points: int) -> list[Point]:
        return reduce_summaries(summaries, focus, points, self.settings).points


def ordered(summary: Summary, focus: Focus) -> list[Point]:
    """A result's points as a reader takes them: a timeline by date, anything else best first."""
    if focus.kind != "timeline":
        return list(summary.points)
    return sorted(summary.points, key=lambda point: (_first_year(point.text), point.order))


def whole_sentences(text: str) -> list[tuple[int, int]]:
    """A chunk's sentences without the pieces its edges cut: the chunker cuts at a size, so a
    chunk may begin inside a sentence (in lower case) or end inside one (with no closing
    punctuation); the neighbouring chunk holds that sentence whole."""
    spans = sentence_spans(text)
    if spans and text[spans[0][0]].islower():
        spans = spans[1:]
    if spans and not _SENTENCE_END.search(text, spans[-1][0], spans[-1][1]):
        spans = spans[:-1]
    return spans


def _weights(term_lists: Iterable[list[str]]) -> dict[str, float]:
    """A term's weight: how many inputs share it (the batch's recurring content), dampened."""
    spread = Counter(term for terms in term_lists for term in set(terms))
    return {term: math.log1p(count) for term, count in spread.items()}


def _choose(
    candidates: list[Point], weights: dict[str, float], focus: Focus, points: int, settings: OfflineSettings, *, source_decay: float
) -> list[Point]:
    wanted = set(content_terms(focus.instruction)) if focus.instruction else set()
    cue = _KIND_CUES.get(focus.kind)
    scored: list[tuple[float, Point, frozenset[str]]] = []
    for candidate in candidates:
        terms = frozenset(content_terms(candidate.text))
        if len(terms) < settings.min_terms or not_a_claim(candidate.text):
            continue
        score = math.fsum(weights.get(term, 0.0) for term in terms) / math.sqrt(len(terms))
        if wanted:
            score += settings.instruction_weight * len(wanted & terms) / len(wanted)
        if cue is not None and cue.search(candidate.text):
            score += settings.cue_weight
        scored.append((score, candidate, terms))
    scored.sort(key=lambda entry: (-entry[0], entry[1].order))
    chosen: list[tuple[Point, frozenset[str]]] = []
    taken: Counter[str] = Counter()
    while scored and len(chosen) < points:
        best = max(range(len(scored)), key=lambda i: (scored[i][0] * source_decay ** taken[scored[i][1].resource_id], -i))
        score, candidate, terms = scored.pop(best)
        if any(_overlap(terms, kept) >= settings.repeat_overlap for _, kept in chosen):
            continue
        taken[candidate.resource_id] += 1
        chosen.append((Point(candidate.text, candidate.chunk_ids, candidate.resource_id, round(score, 4), candidate.order), terms))
    return sorted((point for point, _ in chosen), key=lambda point: (-point.score, point.order))


def _overlap(one: frozenset[str], other: frozenset[str]) -> float:
    return len(one & other) / min(len(one), len(other))


def _order(passage: Passage, start: int) -> tuple[int, int]:
    return (passage.ordinal, start)


def _first_year(text: str) -> int:
    """The first year a point names; one that names none goes last."""
    found = _YEAR.search(text)
    return int(found.group(1)) if found else 10_000
