"""Split extracted segments into citeable chunks.

A chunk is the unit that search returns and that a citation points at, so it never spans two
locators: a citation must name one PDF page, one media time range or one web section, and the
evidence view must be able to show the cited text at that place. Each run of segments sharing a
locator is therefore chunked on its own. A transcript's segments (each a stretch of speech with
its ``start`` and ``end``) are the exception: consecutive ones are chunked together at segment
boundaries, and the chunk's time range runs from its first segment's start to its last one's end.

Within a run, chunks end at sentence (or paragraph) boundaries where possible, else at a space,
else mid-word (text with no spaces at all). Consecutive chunks overlap a little, so a sentence that
straddles a cut is still found whole in one of the two chunks.

Chunk ids are content addressed (source fingerprint, ordinal, text) rather than random: re-ingesting
unchanged content on any machine reproduces the same ids, so citations stored in old chat turns
keep resolving and unchanged sources can reuse their chunks in a new revision.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from pipeline.line_boxes import LINES, chunk_boxes, shifted
from pipeline.types import Segment

# Characters that are not text: whitespace, C0 controls, soft hyphens (U+00AD; PDFium reports
# hyphenation points as U+FFFE), zero-width space and BOM. Runs of them separate "pieces" of text.
_GAP_CHARS = r"\s\x00-\x08\x0e-\x1b\x7f\u00ad\u200b\ufeff\ufffe\uffff"
_PIECE = re.compile(f"[^{_GAP_CHARS}]+")
_RULED_GAP = re.compile(f"[{_GAP_CHARS}]{{2,}}|(?! )[{_GAP_CHARS}]")
# A line break alone between two text characters, at least one of them below U+1100 (so not
# East Asian wide): by far the most common gap in PDF text, and its rule is a plain space. Being
# one character for one, it is replaced in one C-level pass that moves no offset; the Python loop
# below then only visits the rarer gaps.
_NARROW_TEXT = f"[^{_GAP_CHARS}\u1100-\U0010ffff]"
_WRAPPED_LINE = re.compile(
    f"\n(?:(?<={_NARROW_TEXT}\n)(?=[^{_GAP_CHARS}])|(?<=[^{_GAP_CHARS}]\n)(?={_NARROW_TEXT}))"
)
_GAP = re.compile(f"[{_GAP_CHARS}]")
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_SOFT_HYPHENS = frozenset("\u00ad\ufffe")
_PLAIN_LINE_ENDS = frozenset({"\n", "\r\n", " \n", "\n ", " \r\n"})
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")

# A sentence ends at terminal punctuation (plus closing quotes/brackets) followed by a space, at
# CJK/Devanagari terminal punctuation (no space follows in those scripts), or at a paragraph break.
_SENTENCE_END = re.compile(
    r"[.!?\u2026\u203c\u2047-\u2049\u061f\u06d4][\"'\u2019\u201d\u00bb)\]]*(?=\s)"
    r"|[\u3002\uff01\uff1f\uff61\u0964\u0965][\u300d\u300f\u201d\u2019\uff09)]*"
    r"|\n"
)
# Marks the shared locator of a run of timed segments (a transcript) while chunking.
TIMED = "\x00timed"
# A transcript chunk's stretches of speech: [start, end) in its text, and start and end in seconds.
SPOKEN = "spoken"
# Where a cut between words is acceptable: at a space, or after CJK clause punctuation.
_WORD_BREAK = re.compile(r"[ \n]|(?<=[\uff0c\u3001\uff1b\uff1a])")


@dataclass(frozen=True)
class ChunkSettings:
    """How sources are cut into chunks (GNOSI_CHUNK_MAX_CHARS, GNOSI_CHUNK_OVERLAP_CHARS).

    1,200 characters hold a paragraph or two, about what a citation should point at; 150 of
    overlap keep a sentence cut at a boundary whole in one of the two chunks.
    """

    max_chars: int = 1200
    overlap_chars: int = 150

    def __post_init__(self) -> None:
        if self.max_chars < 1 or not 0 <= self.overlap_chars < self.max_chars:
            raise ValueError("need max_chars >= 1 and 0 <= overlap_chars < max_chars")

    def recipe(self, embedder: str) -> str:
        """What a source's chunks were made with: a source whose recipe differs from the current
        one is chunked and embedded again (from its cached extraction) on the next ingestion."""
        return f"chunks {self.max_chars}/{self.overlap_chars}; vectors {embedder}"


@dataclass(frozen=True)
class Chunk:
    """One citeable piece of a source.

    ``locator`` is the segment's locator plus ``char_start``/``char_end``: the chunk's span in the
    locator's text (the segment text, or the texts of consecutive segments sharing that locator
    joined by a blank line), so the evidence view can highlight it. A segment's line table
    (``pipeline.line_boxes``) becomes the ``boxes`` of the lines the chunk covers. A transcript's
    chunk has instead its time range (``start``/``end``) and its stretches of speech (``spoken``).
    """

    ordinal: int
    text: str
    locator: dict[str, Any]
    chunk_id: str


@dataclass(frozen=True)
class _Normalised:
    """Whitespace-normalised text that remembers where each kept run came from in the original."""

    text: str
    norm_starts: list[int]
    orig_starts: list[int]

    def original_offset(self, index: int) -> int:
        piece = bisect_right(self.norm_starts, index) - 1
        return self.orig_starts[piece] + index - self.norm_starts[piece]

    def normalised_offset(self, index: int) -> int:
        """Where original offset ``index`` went; an offset inside a collapsed gap goes to the next
        kept character."""
        piece = bisect_right(self.orig_starts, index) - 1
        if piece < 0:
            return 0
        ceiling = self.norm_starts[piece + 1] if piece + 1 < len(self.norm_starts) else len(self.text)
        return min(self.norm_starts[piece] + index - self.orig_starts[piece], ceiling)


def chunk_segments(
    segments: list[Segment],
    *,
    source_fingerprint: str,
    settings: ChunkSettings = ChunkSettings(),
) -> list[Chunk]:
    """Chunk ``segments`` (in document order) into chunks of at most ``max_chars`` characters.

    Consecutive segments with an identical locator are chunked as one text (an extractor may emit
    one segment per paragraph of a page), paragraphs kept apart by ``"\\n"``. Ordinals run from 0
    across the whole source. Whitespace-only input yields no chunks.
    """
    if not source_fingerprint:
        raise ValueError("source_fingerprint is required: chunk ids are derived from it")
    max_chars, overlap_chars = settings.max_chars, settings.overlap_chars
    chunks: list[Chunk] = []
    for locator_of_run, run in groupby(segments, key=_run_locator):
        if TIMED in locator_of_run:
            for text, locator in _speech_chunks(list(run), max_chars, overlap_chars):
                chunks.append(Chunk(len(chunks), text, locator, make_chunk_id(source_fingerprint, len(chunks), text)))
            continue
        joined, lines = _joined(list(run))
        normalised = _normalise(joined)
        for start, end in _spans(normalised.text, max_chars, overlap_chars):
            text = normalised.text[start:end]
            char_start, char_end = normalised.original_offset(start), normalised.original_offset(end - 1) + 1
            locator = {**locator_of_run, "char_start": char_start, "char_end": char_end}
            if lines is not None:
                locator.update(chunk_boxes(lines, char_start, char_end, normalised.normalised_offset))
            ordinal = len(chunks)
            chunks.append(Chunk(ordinal, text, locator, make_chunk_id(source_fingerprint, ordinal, text)))
    return chunks


def _run_locator(segment: Segment) -> dict[str, Any]:
    """The locator a segment's chunks share: its own, less the line table they narrow; a timed
    segment's, less its times (consecutive stretches of speech chunk together), marked ``TIMED``."""
    if "start" in segment.locator:
        return {TIMED: True, **{key: value for key, value in segment.locator.items() if key not in ("start", "end")}}
    return {key: value for key, value in segment.locator.items() if key != LINES}


def _speech_chunks(run: list[Segment], max_chars: int, overlap_chars: int) -> list[tuple[str, dict[str, Any]]]:
    """Chunks of consecutive timed segments (a transcript): whole segments up to ``max_chars``,
    located from the first one's start to the last one's end, the next chunk beginning with the
    last segments of this one that fit in ``overlap_chars``; a segment longer than ``max_chars``
    alone is cut as text is, every piece keeping its time range."""
    texts = [_normalise(segment.text).text for segment in run]
    chunks: list[tuple[str, dict[str, Any]]] = []
    first = 0
    while first < len(run):
        last, size = first + 1, len(texts[first])
        while last < len(run) and size + 1 + len(texts[last]) <= max_chars:
            size, last = size + 1 + len(texts[last]), last + 1
        text, spoken = _spoken(run[first:last], texts[first:last])
        shared = {key: value for key, value in _run_locator(run[first]).items() if key != TIMED}
        locator = {"start": run[first].locator["start"], "end": run[last - 1].locator["end"], **shared}
        pieces = _spans(text, max_chars, overlap_chars)
        chunks.extend((text[start:end], {**locator, SPOKEN: spoken} if len(pieces) == 1 else locator) for start, end in pieces)
        if last == len(run):
            break
        overlap, back = last, 0
        while overlap - 1 > first and back + len(texts[overlap - 1]) + 1 <= overlap_chars:
            overlap, back = overlap - 1, back + len(texts[overlap - 1]) + 1
        # the overlap only where the next segment still fits after it: else the next chunk
        # would repeat this one's end and nothing more
        first = overlap if back + len(texts[last]) <= max_chars else last
    return chunks


def _spoken(run: list[Segment], texts: list[str]) -> tuple[str, list[list[float]]]:
    """The segments' texts joined by a space, and each one's ``[start, end)`` in that text with
    its time range in seconds, so a viewer can play the very words a quote is."""
    joined: list[str] = []
    spoken: list[list[float]] = []
    offset = 0
    for segment, text in zip(run, texts):
        if not text:
            continue
        offset += 1 if joined else 0
        spoken.append([offset, offset + len(text), segment.locator["start"], segment.locator["end"]])
        joined.append(text)
        offset += len(text)
    return " ".join(joined), spoken


def _joined(run: list[Segment]) -> tuple[str, list[list[float]] | None]:
    """The run's texts joined by a blank line, and their line tables as spans of that text (None
    when no segment of the run has one)."""
    texts: list[str] = []
    lines: list[list[float]] = []
    offset = 0
    for segment in run:
        lines.extend(shifted(segment.locator.get(LINES, []), offset))
        texts.append(segment.text)
        offset += len(segment.text) + 2
    has_lines = any(LINES in segment.locator for segment in run)
    return "\n\n".join(texts), lines if has_lines else None


def make_chunk_id(source_fingerprint: str, ordinal: int, text: str) -> str:
    """Return ``ch_`` + 20 hex digits of BLAKE2b over fingerprint, ordinal and text."""
    digest = hashlib.blake2b(digest_size=10)
    digest.update(f"{source_fingerprint}\x1f{ordinal}\x1f".encode())
    digest.update(text.encode("utf-8"))
    return "ch_" + digest.hexdigest()


def _normalise(text: str) -> _Normalised:
    """Collapse whitespace: a blank line becomes ``"\\n"``, any other gap a single space.

    Two exceptions join without a space: a line wrapped at a soft hyphen, and a line break between
    two East Asian wide characters (CSS Text 3 segment-break rule; Chinese and Japanese put no space
    between words, so PDF line wraps must not insert one). Lone surrogates, which cannot be stored
    as UTF-8, become U+FFFD.
    """
    text = _WRAPPED_LINE.sub(" ", _SURROGATE.sub("\ufffd", text))
    first = _PIECE.search(text)
    if first is None:
        return _Normalised("", [], [])
    end = len(text)
    while _GAP.match(text, end - 1):  # from the end: a regex searching for "the last piece"
        end -= 1  # would try every position of the text from the start
    parts: list[str] = []
    norm_starts: list[int] = []
    orig_starts: list[int] = []
    length = 0
    previous_end = first.start()
    # Text between two gaps that need a rule is copied verbatim: single spaces stay as they are,
    # so only the rare gaps (line breaks, runs, soft hyphens) cost a Python step.
    for gap in _RULED_GAP.finditer(text, previous_end, end):
        kept = text[previous_end : gap.start()]
        norm_starts.append(length)
        orig_starts.append(previous_end)
        parts.append(kept)
        length += len(kept)
        separator = _separator(gap.group(), before=text[gap.start() - 1], after=text[gap.end()])
        parts.append(separator)
        length += len(separator)
        previous_end = gap.end()
    norm_starts.append(length)
    orig_starts.append(previous_end)
    parts.append(text[previous_end:end])
    return _Normalised("".join(parts), norm_starts, orig_starts)


def _separator(gap: str, *, before: str, after: str) -> str:
    if gap in _PLAIN_LINE_ENDS:  # a wrapped line of PDF text, by far the most common ruled gap
        return "" if _is_wide(before) and _is_wide(after) else " "
    line_breaks = len(_LINE_BREAK.findall(gap))
    if line_breaks >= 2:
        return "\n"
    if _SOFT_HYPHENS.intersection(gap) or not any(char.isspace() for char in gap):
        return ""
    if line_breaks == 1 and _is_wide(before) and _is_wide(after):
        return ""
    return " "


def _is_wide(char: str) -> bool:
    if char < "\u1100":  # nothing below the Hangul Jamo block is wide
        return False
    return unicodedata.east_asian_width(char) in ("W", "F") and not _HANGUL.match(char)


def _spans(text: str, max_chars: int, overlap_chars: int) -> list[tuple[int, int]]:
    """Return the (start, end) spans of the chunks of ``text``, stripped of surrounding blanks."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        if len(text) - start <= max_chars:
            end, at_sentence = len(text), True
        else:
            end, at_sentence = _cut(text, start, max_chars)
        window = text[start:end]
        if stripped := window.strip():
            stripped_start = start + len(window) - len(window.lstrip())
            spans.append((stripped_start, stripped_start + len(stripped)))
        if end >= len(text):
            break
        start = _next_start(text, start, end, overlap_chars, at_sentence)
    return spans


def _cut(text: str, start: int, max_chars: int) -> tuple[int, bool]:
    """Choose where the chunk starting at ``start`` ends; also say whether that is a sentence end.

    A sentence end is taken only in the second half of the window, so chunks stay reasonably full.
    """
    limit = start + max_chars
    sentence_ends = [m.end() for m in _SENTENCE_END.finditer(text, start + max_chars // 2, limit + 1)]
    sentence_ends = [end for end in sentence_ends if end <= limit]
    if sentence_ends:
        return sentence_ends[-1], True
    breaks = [m.start() for m in _WORD_BREAK.finditer(text, start + 1, limit + 1)]
    if breaks:
        return breaks[-1], False
    cut = limit
    while cut > start + 1 and unicodedata.category(text[cut]).startswith("M"):
        cut -= 1  # never separate a combining mark from its base character
    return cut, False


def _next_start(text: str, start: int, end: int, overlap_chars: int, at_sentence: bool) -> int:
    """Start the next chunk inside the last ``overlap_chars`` of this one.

    Prefer a sentence start; after a cut at a sentence end, overlap only by whole sentences. The
    overlap never exceeds half of the current chunk, which guarantees progress.
    """
    lowest = max(end - overlap_chars, (start + end + 1) // 2)
    if lowest >= end:
        return end
    for match in _SENTENCE_END.finditer(text, max(start, lowest - 8), end):
        if lowest <= match.end() < end:
            return match.end()
    if at_sentence:
        return end
    word_break = _WORD_BREAK.search(text, lowest, end)
    return word_break.end() if word_break else lowest
