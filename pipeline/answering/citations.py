"""Citation markers in answer text, checked against the evidence of the turn, and quote location.

A model cites with markers: ``[ch_0123abcd...]`` (the chunk id it was shown), ``[3]`` (the ``ref``
number the tool results carried), a group ``[ch_a, ch_b]``, or a bare ``ch_...`` id. Each id is
resolved through the turn's ``ToolRegistry``: a marker naming evidence a tool returned becomes the
canonical ``[chunk_id]``; any other marker (invented, or copied from a source's own text) is
removed together with the spaces before it, so it is never shown. ``MarkerFilter`` does the same
on a token stream, holding back only text that could still become a marker.

Support: a marker counts only when its chunk supports the claim before it, lexically (``supports``,
threshold measured on SciFact); otherwise it is shown as ``[unverified]`` and the turn's ``done``
says how many were dropped. Zero unverifiable citations reach the reader.

Quotes: the UI highlights the cited passage, so every citation carries a quote that is an exact
substring of the chunk. ``locate_quote`` finds a claimed passage in a chunk while ignoring case,
accents, whitespace and punctuation (PDF text differs from what a model retypes in exactly
those). rapidfuzz is not installed; the standard library's ``difflib.SequenceMatcher`` gives the
same "partial ratio" idea: the matching blocks of the squashed quote within the squashed chunk,
accepted when they cover most of the quote inside a span not much longer than it. Chunks are at
most a few thousand characters, so its quadratic worst case costs milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import regex

from pipeline.answering.sentences import content_terms, sentence_spans
from pipeline.answering.types import EvidenceItem, ToolRegistry
from pipeline.textnorm import fold

_ID = r"ch_[A-Za-z0-9_-]{1,64}|\d{1,4}"
_BRACKETED = rf"\[\s*(?:{_ID})(?:\s*[,;]\s*(?:{_ID}))*\s*\]"
_BARE = r"(?<![\w\[])ch_[A-Za-z0-9]{4,64}(?![\w\]])"
MARKER = regex.compile(rf"[ \t]*(?:{_BRACKETED}|{_BARE})")
_IDS_IN_MARKER = regex.compile(_ID)
_CANONICAL = regex.compile(r"\[(ch_[A-Za-z0-9_-]+)\]")
_MAX_PENDING_MARKER = 400  # an unclosed "[" longer than any marker group is plain text
_MIN_SIMILARITY = 0.85
_MIN_BLOCK = 3
_MAX_FUZZY_QUOTE = 1000  # a longer "quote" is not a sentence: only an exact match counts


# A claim is supported by its chunk when the chunk holds it (located as a quote) or holds this
# share of its content terms. Chosen on SciFact (1,258 claims, each against an abstract its
# qrels name, and against a random abstract): 0.3 drops 16.7 % of the claims against their own
# abstract and keeps 3.6 % against a random one; 0.4: 27.7 % / 0.9 %; 0.5: 37.5 % / 0.5 %.
# SciFact's claims are written apart from their abstracts; a model writing from the chunk it was
# shown stays closer to its words, and a dropped claim is still shown, marked, not hidden.
MIN_SUPPORT = 0.4
UNVERIFIED = "[unverified]"


@dataclass(frozen=True)
class CitedText:
    """Answer text whose markers all name validated evidence, and the citations it makes.

    ``dropped``: markers whose chunk does not support the claim before them; each is shown as
    ``[unverified]`` instead, and makes no citation.
    """

    text: str
    citations: list[dict[str, str]]
    dropped: int = 0


def extract_markers(text: str) -> list[str]:
    """The ids named by markers in ``text``, in order of first appearance, without repeats."""
    ids: list[str] = []
    for match in MARKER.finditer(text):
        for marker_id in _IDS_IN_MARKER.findall(match.group()):
            if marker_id not in ids:
                ids.append(marker_id)
    return ids


def resolve(marker_id: str, registry: ToolRegistry) -> EvidenceItem | None:
    """The evidence a marker id names this turn: a chunk id or a ``ref`` number, else None."""
    if marker_id.isdigit():
        return registry.numbered(int(marker_id))
    return registry.seen(marker_id)


class MarkerFilter:
    """Rewrites markers in streamed text: valid ones to ``[chunk_id]``, invalid ones away.

    ``feed`` returns the text that is safe to show now; ``flush`` returns the rest at the end.
    The concatenated output equals the rewrite of the whole text at once, because the text is
    only ever cut where no marker (nor the spaces before one) can straddle the cut.
    """

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._pending = ""

    def feed(self, text: str) -> str:
        self._pending += text
        cut = _safe_cut(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._rewrite(ready)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return self._rewrite(ready)

    def _rewrite(self, text: str) -> str:
        return MARKER.sub(self._replacement, text)

    def _replacement(self, match: regex.Match[str]) -> str:
        items = (resolve(marker_id, self._registry) for marker_id in _IDS_IN_MARKER.findall(match.group()))
        valid = list(dict.fromkeys(item.chunk_id for item in items if item is not None))
        if not valid:
            return ""
        leading = match.group()[: len(match.group()) - len(match.group().lstrip(" \t"))]
        return leading + "".join(f"[{chunk_id}]" for chunk_id in valid)


def _safe_cut(text: str) -> int:
    """Where ``text`` may be cut: before a trailing unclosed ``[``, word, or run of spaces."""
    cut = len(text)
    bracket = text.rfind("[")
    if bracket >= 0 and "]" not in text[bracket:] and len(text) - bracket <= _MAX_PENDING_MARKER:
        cut = bracket
    while cut > 0 and (text[cut - 1].isalnum() or text[cut - 1] in "_-"):
        cut -= 1  # a trailing word may still grow into a bare chunk id
    while cut > 0 and text[cut - 1] in " \t":
        cut -= 1  # spaces go with a following marker if it is dropped
    return cut


def validated_citations(answer_text: str, registry: ToolRegistry) -> CitedText:
    """Rewrite the markers of ``answer_text`` (see ``MarkerFilter``) and list its citations.

    Each citation is ``{"chunk_id", "quote"}``; the quote is the passage of the chunk that the
    claim before the marker (the sentence it ends) corresponds to, see ``best_quote``. Repeated
    (chunk, quote) pairs are listed once.
    """
    marker_filter = MarkerFilter(registry)
    return citations_in(marker_filter.feed(answer_text) + marker_filter.flush(), registry)


def citations_in(text: str, registry: ToolRegistry) -> CitedText:
    """Citations of canonical ``[chunk_id]`` markers in already rewritten ``text``; a marker whose
    chunk does not support its claim (``supports``) becomes ``[unverified]`` and cites nothing."""
    citations: list[dict[str, str]] = []
    shown: list[str] = []
    previous_end, shown_up_to, claim, dropped = 0, 0, "", 0
    for match in _CANONICAL.finditer(text):
        item = registry.seen(match.group(1))
        spans = sentence_spans(text[previous_end : match.start()])
        if spans:
            start, end = spans[-1]
            claim = text[previous_end + start : previous_end + end]
        previous_end = match.end()
        if item is None:
            continue
        if not supports(item.text, claim):
            dropped += 1
            shown.append(text[shown_up_to : match.start()] + UNVERIFIED)
            shown_up_to = match.end()
            continue
        citation = {"chunk_id": item.chunk_id, "quote": best_quote(item.text, claim)}
        if citation not in citations:
            citations.append(citation)
    shown.append(text[shown_up_to:])
    return CitedText("".join(shown), citations, dropped)


def supports(chunk_text: str, claim: str) -> bool:
    """Lexical support: the chunk holds the claim (as ``locate_quote`` finds quotes), or at least
    ``MIN_SUPPORT`` of the claim's content terms. A claim with no content terms supports nothing."""
    terms = set(content_terms(claim))
    if not terms:
        return False
    if locate_quote(chunk_text, claim):
        return True
    return len(terms.intersection(content_terms(chunk_text))) >= MIN_SUPPORT * len(terms)


def best_quote(chunk_text: str, claim: str) -> str:
    """The exact passage of ``chunk_text`` that supports ``claim``.

    First a passage the claim quotes in double quotes, then the claim itself, located fuzzily;
    failing both (a paraphrase), the chunk sentence sharing the most content terms with it.
    """
    for quoted in regex.findall(r"[\"\u201c]([^\"\u201c\u201d]{12,})[\"\u201d]", claim) + [claim]:
        span = locate_quote(chunk_text, quoted)
        if span:
            return chunk_text[span[0] : span[1]]
    claim_terms = set(content_terms(claim))
    spans = sentence_spans(chunk_text) or [(0, len(chunk_text))]
    start, end = max(
        spans, key=lambda s: (len(claim_terms.intersection(content_terms(chunk_text[s[0] : s[1]]))), -s[0])
    )
    return chunk_text[start:end]


def locate_quote(chunk_text: str, quote: str) -> tuple[int, int] | None:
    """The ``(start, end)`` of ``quote`` in ``chunk_text``, ignoring case, accents, spaces and punctuation.

    Exact on the squashed texts first; otherwise fuzzy: the difflib matching blocks (of at least
    3 characters) must cover 85 % of the squashed quote (of at most 1000 characters) within a span at
    most 25 % longer than it.
    The span returned runs from the first to the last matched character of the chunk.
    """
    haystack, positions = _squash(chunk_text)
    needle, _ = _squash(quote)
    if not needle or not haystack:
        return None
    found = haystack.find(needle)
    if found >= 0:
        return positions[found], positions[found + len(needle) - 1] + 1
    if len(needle) > _MAX_FUZZY_QUOTE:
        return None
    blocks = [
        block
        for block in SequenceMatcher(None, needle, haystack, autojunk=False).get_matching_blocks()
        if block.size >= _MIN_BLOCK
    ]
    if not blocks:
        return None
    start, end = blocks[0].b, blocks[-1].b + blocks[-1].size
    if sum(block.size for block in blocks) < _MIN_SIMILARITY * len(needle) or end - start > 1.25 * len(needle):
        return None
    return positions[start], positions[end - 1] + 1


def _squash(text: str) -> tuple[str, list[int]]:
    """Folded letters and digits of ``text``, with the original index of each kept character."""
    kept: list[str] = []
    positions: list[int] = []
    for index, char in enumerate(text):
        for folded in _fold_char(char):
            kept.append(folded)
            positions.append(index)
    return "".join(kept), positions


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    return "".join(c for c in fold(char) if c.isalnum())
