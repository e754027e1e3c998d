"""Segments and locators of OCR text: the page, the engine that read it, and where each line is.

The pages OCR read are cleaned as a text layer's pages are (``pipeline.extractors.clean_pages``):
a scanned book's running headers leave the text and its printed page numbers become labels. A
segment carries every line's span in its text with its box (a line table,
``pipeline.line_boxes``), which the chunker narrows to the lines each chunk covers, so a citation
highlights the lines of the scan its quote came from; the locator says the text is machine-read
(``ocr``: the engine), which the citation shows.
"""
from __future__ import annotations

from pipeline.extractors.clean_pages import clean_document
from pipeline.extractors.pdf_lines import PageLine
from pipeline.ocr.lines import OcrPage
from pipeline.types import Segment


def ocr_segments(
    pages: dict[int, OcrPage], *, defined_labels: dict[int, str] | None = None, printed_labels: bool = True
) -> list[Segment]:
    """The segments of the pages OCR read (page number → what it read), in page order.
    ``defined_labels``: the labels the document gives these pages; without them,
    ``printed_labels`` says whether printed page numbers may label them (not when the
    document's other pages are labelled already)."""
    read = {number: page for number, page in pages.items() if page.lines}  # a blank verso is no page of text
    if not read:
        return []
    engine = next(iter(read.values())).engine  # one engine reads a source (a setting)
    lines = {
        number: [PageLine(" ".join(line.text.split()), line.box) for line in page.lines]
        for number, page in read.items()
    }
    return clean_document(
        lines, defined_labels=defined_labels or {}, extra={"ocr": engine}, printed_labels=printed_labels
    ).segments
