"""Locators of OCR text: the page, the engine that read it, and the boxes of the cited lines.

A page's segment carries every line's span in the page text with its box (``ocr_lines``); once
the chunker has cut the page, each chunk keeps only the boxes of the lines its span overlaps
(``boxes``) and where each line is in the chunk's text (``box_spans``: the chunker turns line
breaks into single spaces, so these offsets hold in the chunk text too), so a citation
highlights the lines of the scan its quote came from, and the
locator says the text is machine-read (``ocr``: the engine), which the citation shows.
"""
from __future__ import annotations

from typing import Any

from pipeline.ocr.lines import OcrPage
from pipeline.types import Segment

LINES = "ocr_lines"


def page_segment(number: int, page: OcrPage) -> Segment:
    """One segment holding the page's lines, one per text line, and where each line is."""
    spans: list[list[float]] = []
    offset = 0
    texts = [" ".join(line.text.split()) for line in page.lines]  # the chunker collapses runs of spaces
    for text, line in zip(texts, page.lines):
        spans.append([offset, offset + len(text), *line.box])
        offset += len(text) + 1  # the newline joining it to the next
    return Segment("\n".join(texts), {"page": number, "ocr": page.engine, LINES: spans})


def chunk_locator(locator: dict[str, Any]) -> dict[str, Any]:
    """A chunk's locator with the page's line table replaced by the boxes of the lines it covers."""
    spans = locator.get(LINES)
    if spans is None:
        return locator
    start, end = locator.get("char_start", 0), locator.get("char_end", 0)
    covered = [span for span in spans if span[0] < end and span[1] > start]
    narrowed = {key: value for key, value in locator.items() if key != LINES}
    return {
        **narrowed,
        "boxes": [span[2:] for span in covered],
        "box_spans": [[max(int(span[0]), start) - start, min(int(span[1]), end) - start] for span in covered],
    }
