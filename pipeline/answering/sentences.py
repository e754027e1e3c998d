"""Sentences and content terms, the units the extractive engine scores and quotes.

Sentences are returned as spans of the chunk text, so a quote is always an exact substring of the
evidence. The splitter is stricter than the chunker's boundary rule (which only needs *a* good
place to cut): a period after a known abbreviation or a single-letter initial ("U.S.", "J. Smith",
"approx. 5"), or one followed by a lower-case letter, does not end a sentence, because a quote cut
there would lose the fact it was chosen for.

Terms are folded words (case and accents removed, see ``pipeline.textnorm``) without stop words,
lightly stemmed so that "founded", "founding" and "found" meet. The stemmer only strips a few
English inflections and is applied identically to question and evidence, so in other languages it
is at worst a no-op that merges a few unrelated words.
"""
from __future__ import annotations

from functools import lru_cache

import regex

from pipeline.textnorm import STOP_WORDS, fold, words

MAX_SENTENCE_CHARS = 400

# Terminal punctuation plus closing quotes/brackets, before a space; CJK/Devanagari stops need no
# space; a paragraph break always ends a sentence.
_BOUNDARY = regex.compile(
    r"[.!?\u2026][\"'\u2019\u201d\u00bb)\]]*(?=\s)|[\u3002\uff01\uff1f\u0964\u0965][\u300d\u201d)]*|\n"
)
# A heading the text layer ran into the sentence after it ("… INTRODUCTION The Digital Millennium
# Copyright Act was signed …", "TITLE II: ONLINE COPYRIGHT … LIMITATION Title II of the DMCA adds …"):
# the white space before a capitalised word, where what precedes it is a section word, or two
# words in capitals of which one has four letters or more. One capitalised acronym ("FBI
# Director …", "NASA Administrator …") is not a heading.
_BEFORE_CAPITALISED = regex.compile(r"(?<=\S)\s+(?=\p{Lu}\p{Ll})")
_SECTION_WORDS = frozenset(
    "INTRODUCTION BACKGROUND SUMMARY ABSTRACT CONCLUSION CONCLUSIONS DISCUSSION METHODS RESULTS OVERVIEW "
    "APPENDIX ACKNOWLEDGMENTS ACKNOWLEDGEMENTS PURPOSE SCOPE DEFINITIONS INSTRUCTIONS".split()
)
_WORD_BEFORE = regex.compile(r"([\p{L}.]+)\.[\"'\u2019\u201d\u00bb)\]]*$")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e cf al approx no nos vol fig figs art sec ch p pp "
    "inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt rev".split()
)


def sentence_spans(text: str, *, headings: bool = True) -> list[tuple[int, int]]:
    """Return ``(start, end)`` spans of the sentences of ``text``, stripped, in order.

    A heading run into the next sentence ends where that sentence starts (``_ends_a_heading``),
    so a quote does not open with it; ``headings=False`` for a table's text, whose rows
    ("Company: ISOLA USA Corp. | …") hold capitals that are no heading. A sentence longer than
    ``MAX_SENTENCE_CHARS`` (a table row or text without punctuation) is cut at spaces into windows
    of at most that size, so a quote stays readable.
    """
    stops = {match.end() for match in _BOUNDARY.finditer(text) if not _is_false_stop(text, match.start(), match.end())}
    if headings:
        stops.update(match.start() for match in _BEFORE_CAPITALISED.finditer(text) if _ends_a_heading(text, match.start()))
    spans: list[tuple[int, int]] = []
    start = 0
    for stop in sorted(stops):
        spans.extend(_windows(text, start, stop))
        start = stop
    spans.extend(_windows(text, start, len(text)))
    return spans


def _ends_a_heading(text: str, end: int) -> bool:
    before = [_letters(token) for token in text[max(0, end - 120) : end].split()[-2:]]
    if not before or not _in_capitals(before[-1]):
        return False
    if before[-1] in _SECTION_WORDS:
        return True
    return len(before) == 2 and _in_capitals(before[0]) and max(map(len, before)) >= 4


def _letters(token: str) -> str:
    return "".join(character for character in token if character.isalpha())


def _in_capitals(letters: str) -> bool:
    return len(letters) >= 2 and letters.isupper()


def _is_false_stop(text: str, stop: int, end: int) -> bool:
    if text[stop] != ".":
        return False
    following = text[end:].lstrip()[:1]
    if following and following.islower():
        return True
    before = _WORD_BEFORE.search(text, max(0, stop - 20), end)
    if before is None:
        return False
    word = fold(before.group(1)).rstrip(".")
    return word in _ABBREVIATIONS or len(word.replace(".", "")) == 1 or "." in word and len(word) <= 6


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Strip ``text[start:end]`` and cut it into windows of at most ``MAX_SENTENCE_CHARS``."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    windows: list[tuple[int, int]] = []
    while end - start > MAX_SENTENCE_CHARS:
        cut = text.rfind(" ", start + 1, start + MAX_SENTENCE_CHARS)
        cut = cut if cut > start else start + MAX_SENTENCE_CHARS
        windows.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        windows.append((start, end))
    return windows


def content_terms(text: str) -> list[str]:
    """Folded, lightly stemmed words of ``text`` that are not stop words, in order."""
    terms = []
    for word in words(text):
        folded = fold(word)
        if folded not in STOP_WORDS:
            terms.append(stem(folded))
    return terms


@lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """Strip a plural or -ed/-ing ending and a final ``e`` from a folded word of 5+ letters."""
    if len(term) < 5 or not term.isalpha():
        return term
    if term.endswith("ies"):
        term = term[:-3] + "y"
    elif term.endswith("s") and not term.endswith(("ss", "us", "is")):
        term = term[:-1]
    for suffix in ("ing", "ed"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            term = term[: -len(suffix)]
            break
    return term[:-1] if term.endswith("e") and len(term) >= 5 else term
