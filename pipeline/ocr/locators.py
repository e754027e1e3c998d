"""Segments and locators of OCR text: the page, the engine that read it, and where each line is.

The pages OCR read join the document's other pages and are cleaned with them
(``pipeline.extractors.clean_pages``): a scanned book's running headers leave the text and its
printed page numbers become labels. A segment carries every line's span in its text with its box
(a line table, ``pipeline.line_boxes``), which the chunker narrows to the lines each chunk covers,
so a citation highlights the lines of the scan its quote came from; the locator says the text is
machine-read (``ocr``: the engine), which the citation shows.
"""
from __future__ import annotations

from pipeline.extractors.clean_pages import DocumentPages
from pipeline.extractors.pdf_lines import PageLine
from pipeline.ocr.lines import OcrPage


def with_read_pages(document: DocumentPages, pages: dict[int, OcrPage]) -> DocumentPages:
    """``document`` with the pages OCR read (page number → what it read); a blank page stays out."""
    if not pages:
        return document
    engine = next(iter(pages.values())).engine  # one engine reads a source (a setting)
    lines = {
        number: [PageLine(" ".join(line.text.split()), line.box) for line in page.lines]
        for number, page in pages.items()
    }
    return document.with_ocr(lines, engine)
