"""Asking the knowledge: what a question finds, and an answer quoted from the pages it rests on.

The seed's rules (docs/decisions/0021): a question scoped to one source version searches only
that version's notes; a global one ranks atomic notes and concepts apart (their scores are not
comparable: full-text rank against term overlap) and takes them in turns, so the answer keeps both
the cross-source view and the page a note came from. An answer never says more than the document:
it quotes sentences of the document blocks the hits' evidence points to (the extractive engine's
selection and refusal thresholds, ``pipeline.answering.extractive``), each cited with its page. A
block a person rewrote lost its evidence, so it is never quoted as the document's words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import zip_longest

from pipeline.answering.extractive import ExtractiveSettings, select_quotes
from pipeline.answering.sentences import content_terms
from pipeline.answering.types import EvidenceItem

NOTE, CONCEPT = "note", "concept"
MAX_HITS = 20
# A concept's name says what it is about: a question term in it counts this much more than in
# the module text.
_NAME_WEIGHT = 3.0


@dataclass(frozen=True)
class Passage:
    """A document block a hit rests on: an exact text of a source version, on one page."""

    source_version_id: str
    block_ordinal: int
    page: int
    page_label: str | None
    text: str


@dataclass(frozen=True)
class Hit:
    """A note (its active version) or a concept (its active version) a question found."""

    kind: str
    id: str
    version_id: str
    title: str
    score: float
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class Citation:
    hit: Hit
    passage: Passage
    quote: str


@dataclass(frozen=True)
class Composed:
    """``status`` is ``answered`` or ``no_evidence`` (nothing found says enough)."""

    status: str
    text: str
    citations: tuple[Citation, ...]


NO_EVIDENCE_TEXT = "The notes do not answer this question."


def concept_score(asked: set[str], name: str, texts: list[str]) -> float:
    """How much of the question (its ``content_terms``, found once for every concept scored) a
    concept covers: each question term found in its name or its modules' points, rarer terms
    (within the concept's text) weighing more, the name more still. Zero when it shares no term
    with the question."""
    if not asked:
        return 0.0
    named = set(content_terms(name))
    said = [set(content_terms(text)) for text in texts]
    score = 0.0
    for term in asked:
        found = sum(term in terms for terms in said)
        if term in named:
            score += _NAME_WEIGHT
        if found:
            score += 1 + math.log(1 + len(said) / found)
    return score / len(asked)


def interleave(notes: list[Hit], concepts: list[Hit], limit: int = MAX_HITS) -> list[Hit]:
    """Notes and concepts, each list best first, taken in turns (a note first: it has pages)."""
    merged = [hit for pair in zip_longest(notes, concepts) for hit in pair if hit is not None]
    return merged[:limit]


def compose(question: str, hits: list[Hit], settings: ExtractiveSettings | None = None) -> Composed:
    """The answer: the sentences of the hits' passages that answer ``question``, each cited; a
    passage two hits share is read once, as the first hit's."""
    items: list[EvidenceItem] = []
    origin: dict[str, tuple[Hit, Passage]] = {}
    for hit in hits:
        for passage in hit.passages:
            key = f"{passage.source_version_id}:{passage.block_ordinal}"
            if key in origin:
                continue
            origin[key] = (hit, passage)
            locator = {"page": passage.page, **({"page_label": passage.page_label} if passage.page_label else {})}
            items.append(EvidenceItem(key, passage.source_version_id, hit.id, passage.source_version_id, passage.text,
                                      locator, hit.score, hit.title))
    quotes = select_quotes(question, items, settings or ExtractiveSettings())
    if not quotes:
        return Composed("no_evidence", NO_EVIDENCE_TEXT, ())
    citations = tuple(Citation(*origin[quote.evidence.chunk_id], quote.text) for quote in quotes)
    return Composed("answered", " ".join(quote.text for quote in quotes), citations)
