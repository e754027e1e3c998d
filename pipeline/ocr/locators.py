"""Locators of OCR text: the page, the engine that read it, and where each line is.

A page's segment carries every line's span in the page text with its box (a line table,
``pipeline.line_boxes``), which the chunker narrows to the lines each chunk covers, so a citation
highlights the lines of the scan its quote came from; the locator says the text is machine-read
(``ocr``: the engine), which the citation shows.
"""
from __future__ import annotations

from pipeline.line_boxes import LINES
from pipeline.ocr.lines import OcrPage
from pipeline.types import Segment


def page_segment(number: int, page: OcrPage) -> Segment:
    """One segment holding the page's lines, one per text line, and where each line is."""
    spans: list[list[float]] = []
    offset = 0
    texts = [" ".join(line.text.split()) for line in page.lines]
    for text, line in zip(texts, page.lines):
        spans.append([offset, offset + len(text), *line.box])
        offset += len(text) + 1  # the newline joining it to the next
    return Segment("\n".join(texts), {"page": number, "ocr": page.engine, LINES: spans})
