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
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

EDGE_LINES = 6
MIN_PAGES = 3
MAX_FURNITURE_CHARS = 160
_DIGITS = re.compile(r"\d+")
_NUMBER = re.compile(r"(?<![\d.,])\d{1,6}(?![\d.,]\d)")
_EDGE_PUNCTUATION = " \t-–—|/·.:"


@dataclass(frozen=True)
class CleanPages:
    texts: dict[int, str]
    """Each page's text without its running lines, by physical page number."""
    labels: dict[int, str]
    """Printed page numbers found in running lines, when they differ from the physical ones."""


def _key(line: str) -> str:
    """A line with its numbers taken out: the same on every page a running line is on."""
    return " ".join(_DIGITS.sub(" ", line).split()).strip(_EDGE_PUNCTUATION) or "#"


def _edges(lines: list[str]) -> list[int]:
    """Indexes of a page's first and last ``EDGE_LINES`` non-empty lines."""
    filled = [index for index, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def remove_running_lines(pages: dict[int, str]) -> CleanPages:
    """``pages``: physical page number → text. Documents of fewer than three pages are unchanged."""
    if len(pages) < MIN_PAGES:
        return CleanPages(dict(pages), {})
    split = {page: text.split("\n") for page, text in pages.items()}
    candidates = {
        page: {index: _key(lines[index]) for index in _edges(lines) if len(lines[index]) <= MAX_FURNITURE_CHARS}
        for page, lines in split.items()
    }
    seen_on: dict[str, set[int]] = defaultdict(set)
    for page, keys in candidates.items():
        for key in keys.values():
            seen_on[key].add(page)
    needed = max(MIN_PAGES, (len(pages) + 1) // 2)
    running = {key for key, on in seen_on.items() if len(on) >= needed}
    texts: dict[int, str] = {}
    numbers: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for page, lines in split.items():
        dropped = {index: key for index, key in candidates[page].items() if key in running}
        for index, key in dropped.items():
            numbers[key][page] = [int(n) for n in _NUMBER.findall(lines[index])]
        texts[page] = "\n".join(line for index, line in enumerate(lines) if index not in dropped).strip()
    return CleanPages(texts, _printed_labels(numbers, list(pages)))


def _printed_labels(numbers: dict[str, dict[int, list[int]]], pages: list[int]) -> dict[int, str]:
    """Labels from the one offset (printed minus physical) that a running line's numbers keep on
    at least half of its pages; none when the printed numbers are the physical ones."""
    best: tuple[int, int] | None = None  # (pages agreeing, offset)
    for on_pages in numbers.values():
        offsets = Counter(n - page for page, found in on_pages.items() for n in set(found))
        if not offsets:
            continue
        offset, agreeing = offsets.most_common(1)[0]
        if agreeing >= max(MIN_PAGES, (len(on_pages) + 1) // 2) and (best is None or agreeing > best[0]):
            best = (agreeing, offset)
    if best is None or best[1] == 0:
        return {}
    return {page: str(page + best[1]) for page in pages if page + best[1] >= 1}
