"""Where each line of a segment sits on its page, carried to the chunks cut from the segment.

An extractor that knows where its lines are (PDFium's text rectangles, an OCR engine's boxes, a
table's rows) puts a line table into the segment's locator under ``LINES``: one
``[start, end, left, top, right, bottom]`` per line, the span in the segment text and the box as
fractions of the page as it is shown (origin top left). The chunker (``pipeline.chunker``)
replaces it in each chunk's locator with the boxes of the lines the chunk covers (``boxes``) and
where each of those lines is in the chunk's own text (``box_spans``), so a citation highlights
the region its quote came from, and a reader of the API gets that region without the PDF.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LINES = "lines"
# (left, top, right, bottom) as fractions of the page's shown width and height, origin top left.
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class PageLine:
    """One line of a page's text, cleaned, and its box on the page as shown (None: unknown)."""

    text: str
    box: Box | None


# Four decimals are a tenth of a point on a letter page: finer than any highlight needs.
DECIMALS = 4


def rounded(box: Sequence[float]) -> list[float]:
    return [round(value, DECIMALS) for value in box]


def shifted(spans: list[list[float]], offset: int) -> list[list[float]]:
    """A segment's line table as spans of a longer text in which the segment starts at ``offset``."""
    return [[span[0] + offset, span[1] + offset, *span[2:]] for span in spans]


def chunk_boxes(
    spans: list[list[float]], start: int, end: int, to_chunk_text: Callable[[int], int]
) -> dict[str, Any]:
    """``boxes`` and ``box_spans`` of the lines overlapping the chunk ``[start, end)``.

    ``spans`` and ``start``/``end`` are offsets in the text the chunk was cut from;
    ``to_chunk_text`` maps such an offset to the chunker's whitespace-collapsed text, which is what
    the chunk's text is a slice of (its ``start`` maps to the chunk's first character).
    """
    def after(index: int) -> int:
        """Where an end offset goes: just after its last character, not past a collapsed gap."""
        return to_chunk_text(index - 1) + 1 if index > 0 else 0

    first = to_chunk_text(start)
    last = after(end)
    covered = [span for span in spans if span[0] < end and span[1] > start]
    return {
        "boxes": [list(span[2:]) for span in covered],
        "box_spans": [
            [max(to_chunk_text(int(span[0])), first) - first, min(after(int(span[1])), last) - first]
            for span in covered
        ],
    }
