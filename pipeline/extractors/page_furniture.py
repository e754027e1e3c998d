"""Running headers and footers of a paginated document, recognised across its pages.

"Copyright Office Summary December 1998 Page 4" at the top of every page, a page number at the
bottom, the Federal Register's masthead: repeated on most pages, they are furniture, not
content. Left in the page text they open chunks, get quoted as answers and dilute search. A line
is furniture when, with its digits removed, the same line sits among the first or last
``EDGE_LINES`` lines of at least half the pages (and of three or more). Case is kept: a title
printed in capitals on the first page is not its running header in mixed case.

The numbers in a running line are the printed page numbers when one of them follows the physical
page at a constant offset ("47699" on the second page of a Federal Register notice): those become
page labels, for documents that define none.

A scan's own OCR layer misreads a running line now and then ("THE SIEGE OF VICKSBUEG"): an edge
line within ``MISREAD_SIMILARITY`` of a running line counts as that line.

A page that repeats the page before it (``REPEAT_SIMILARITY`` of their words shared: the same
sheet scanned four times turned, a form printed twice) does not count towards "most pages": every
line of a repeated page would otherwise look like furniture and the whole page would go.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from difflib import SequenceMatcher
from dataclasses import dataclass

EDGE_LINES = 6
MIN_PAGES = 3
MAX_FURNITURE_CHARS = 160
# How far a printed page number may stray from the document's usual offset and still be the
# page's label: a scan missing or repeating a page or two; farther is a number in the heading.
LABEL_DRIFT = 3
# A misread running line: a character or two in twenty differ (SequenceMatcher's ratio).
MISREAD_SIMILARITY = 0.9
# Two pages of different text share a fifth of their words at most (the, of, and ...); a page
# read again shares nearly all of them, misread words aside.
REPEAT_SIMILARITY = 0.6
_WORD = re.compile(r"\w\w+")
_DIGITS = re.compile(r"\d+")
_NUMBER = re.compile(r"(?<![\d.,])\d{1,6}(?![\d.,]\d)")
_EDGE_PUNCTUATION = " \t-–—|/·.:"


@dataclass(frozen=True)
class CleanPages:
    kept: dict[int, list[int]]
    """Indexes of each page's lines that are not running lines, by physical page number."""
    labels: dict[int, str]
    """Printed page numbers found in running lines, when they differ from the physical ones."""


def _key(line: str) -> str:
    """A line with its numbers taken out: the same on every page a running line is on."""
    return " ".join(_DIGITS.sub(" ", line).split()).strip(_EDGE_PUNCTUATION) or "#"


def _edges(lines: list[str]) -> list[int]:
    """Indexes of a page's first and last ``EDGE_LINES`` non-empty lines."""
    filled = [index for index, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def remove_running_lines(pages: dict[int, list[str]]) -> CleanPages:
    """``pages``: physical page number → its lines. Documents of fewer than three pages (not
    counting repeats) are unchanged."""
    if len(pages) < MIN_PAGES:
        return CleanPages({page: list(range(len(lines))) for page, lines in pages.items()}, {})
    candidates = {
        page: {index: _key(lines[index]) for index in _edges(lines) if len(lines[index]) <= MAX_FURNITURE_CHARS}
        for page, lines in pages.items()
    }
    # Repeats are told by the words the running lines leave: a letterhead and a footer can be
    # most of a slide's words, and every slide would look like the one before.
    running = _running(candidates, _not_repeats(pages, candidates, _running(candidates, list(pages))))
    candidates = {page: _as_running(keys, running) for page, keys in candidates.items()}
    kept: dict[int, list[int]] = {}
    numbers: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for page, lines in pages.items():
        dropped = {index: key for index, key in candidates[page].items() if key in running}
        for index, key in dropped.items():
            numbers[key][page] = [int(n) for n in _NUMBER.findall(lines[index])]
        kept[page] = [index for index in range(len(lines)) if index not in dropped]
    return CleanPages(kept, _printed_labels(numbers, list(pages)))


def _running(candidates: dict[int, dict[int, str]], counted: list[int]) -> set[str]:
    """Keys of the edge lines found on at least half of the ``counted`` pages (and three)."""
    if len(counted) < MIN_PAGES:
        return set()
    seen_on: dict[str, set[int]] = defaultdict(set)
    for page in counted:
        for key in candidates[page].values():
            seen_on[key].add(page)
    needed = max(MIN_PAGES, (len(counted) + 1) // 2)
    return {key for key, on in seen_on.items() if len(on) >= needed}


def _not_repeats(pages: dict[int, list[str]], candidates: dict[int, dict[int, str]], running: set[str]) -> list[int]:
    """The pages whose words, running lines left out, do not repeat the page before's
    (``REPEAT_SIMILARITY``); a page that is all running lines is compared whole (a short page
    scanned twice)."""
    counted: list[int] = []
    before: set[str] = set()
    for page in sorted(pages):
        furniture = {index for index, key in candidates[page].items() if key in running}
        words = _words(line for index, line in enumerate(pages[page]) if index not in furniture) or _words(pages[page])
        if not before or not words or len(words & before) < REPEAT_SIMILARITY * len(words | before):
            counted.append(page)
        before = words
    return counted


def _words(lines: Iterable[str]) -> set[str]:
    return {word.lower() for line in lines for word in _WORD.findall(line)}


def _as_running(keys: dict[int, str], running: set[str]) -> dict[int, str]:
    """``keys`` with each near miss of a running line replaced by that line's key."""
    return {index: key if key in running else _misread_of(key, running) or key for index, key in keys.items()}


def _misread_of(key: str, running: set[str]) -> str | None:
    """The running line ``key`` is a misreading of, if any; lengths, then the ratio's cheap upper
    bound, are compared first: most edge lines are body text, and the ratio is the costly part."""
    for line in running:
        if abs(len(line) - len(key)) > 2:
            continue
        matcher = SequenceMatcher(None, line, key, autojunk=False)
        if matcher.quick_ratio() >= MISREAD_SIMILARITY and matcher.ratio() >= MISREAD_SIMILARITY:
            return line
    return None


def _printed_labels(numbers: dict[str, dict[int, list[int]]], pages: list[int]) -> dict[int, str]:
    """Labels from the running line whose numbers keep one offset (printed minus physical) on at
    least half of its pages; none when the printed numbers are the physical ones.

    A page keeps the number it prints when that is within ``LABEL_DRIFT`` of the offset's guess
    (a scan that skips or repeats a page shifts the offset from there on); a page that prints
    none gets the guess.
    """
    best: tuple[int, int, dict[int, list[int]]] | None = None  # (pages agreeing, offset, numbers by page)
    for on_pages in numbers.values():
        offsets = Counter(n - page for page, found in on_pages.items() for n in set(found))
        if not offsets:
            continue
        offset, agreeing = offsets.most_common(1)[0]
        if agreeing >= max(MIN_PAGES, (len(on_pages) + 1) // 2) and (best is None or agreeing > best[0]):
            best = (agreeing, offset, on_pages)
    if best is None or best[1] == 0:  # printed numbers are the physical ones (or another number)
        return {}
    _, offset, printed = best
    labels: dict[int, str] = {}
    for page in pages:
        guess = page + offset
        near = [n for n in printed.get(page, []) if abs(n - guess) <= LABEL_DRIFT]
        label = min(near, key=lambda n: abs(n - guess)) if near else guess
        if label >= 1:
            labels[page] = str(label)
    return labels
