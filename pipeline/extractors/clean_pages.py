"""A paginated document's pages as segments of clean text, whether a page's text came from the
PDF's own text layer or from OCR: running headers and footers out (``page_furniture``), printed
page numbers as labels where the document defines none, the reference list marked
(``reference_lists``), and each segment's line table (``pipeline.line_boxes``) built from the
lines that stayed, so that no line left out can lend its box to a body line of the same text.

The whole document is cleaned in one pass, because each rule looks across pages: a running
header is a line repeated on most pages, a printed page number is told by its neighbours, and a
reference list runs on from the page where its heading stands. A PDF whose pages are partly
scanned is therefore cleaned after OCR has read its scanned pages, not as two documents.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from pipeline.extractors.page_furniture import remove_running_lines
from pipeline.extractors.pdf_lines import PageLine, line_table, page_text
from pipeline.extractors.reference_lists import mark_reference_lists
from pipeline.line_boxes import LINES
from pipeline.types import Segment


@dataclass(frozen=True)
class DocumentPages:
    """A document's pages before cleaning (physical page number → its lines in reading order)."""

    lines: dict[int, list[PageLine]] = field(default_factory=dict)
    defined_labels: dict[int, str] = field(default_factory=dict)
    """The labels the document itself gives its pages (/PageLabels), pages read by OCR included."""
    tables: dict[int, list[Segment]] = field(default_factory=dict)
    """Each page's tables as segments, placed after the page's text; their locators get the
    page's own (page, label) when the document is cleaned."""
    ocr: dict[int, str] = field(default_factory=dict)
    """The pages OCR read, each with the engine that read it (the locator says so)."""

    def with_ocr(self, read: dict[int, list[PageLine]], engine: str) -> DocumentPages:
        """These pages with the lines OCR read on others; a page OCR found blank stays out."""
        read = {number: lines for number, lines in read.items() if lines}
        return replace(self, lines={**self.lines, **read}, ocr={**self.ocr, **dict.fromkeys(read, engine)})

    def segments(self) -> list[Segment]:
        """The clean text of every page, in page order, each page's tables after its text."""
        pages = dict(sorted(self.lines.items()))
        clean = remove_running_lines({number: [line.text for line in lines] for number, lines in pages.items()})
        kept = {number: [pages[number][index] for index in indexes] for number, indexes in clean.kept.items()}
        labels = self.defined_labels if any(self.defined_labels.values()) else clean.labels
        locators = {number: self._locator(number, labels.get(number)) for number in sorted({*pages, *self.tables})}
        texts = {number: page_text(kept.get(number, [])) for number in locators}
        marked = mark_reference_lists([Segment(texts[number], locators[number]) for number in locators if texts[number]])
        by_page: dict[int, list[Segment]] = {}
        for segment in _with_line_tables(marked, kept):
            by_page.setdefault(segment.locator["page"], []).append(segment)
        return [
            segment
            for number in locators
            for segment in [
                *by_page.get(number, []),
                *(Segment(table.text, {**locators[number], **table.locator}) for table in self.tables.get(number, [])),
            ]
        ]

    def _locator(self, number: int, label: str | None) -> dict[str, object]:
        return {
            "page": number,
            **({"ocr": self.ocr[number]} if number in self.ocr else {}),
            **({"page_label": label} if label else {}),
        }


def _with_line_tables(segments: list[Segment], lines: dict[int, list[PageLine]]) -> list[Segment]:
    """Each segment with the line table of its lines, found in page order."""
    cursors: dict[int, int] = {}
    located: list[Segment] = []
    for segment in segments:
        page = segment.locator["page"]
        table, cursors[page] = line_table(segment.text, lines[page], cursors.get(page, 0))
        located.append(Segment(segment.text, {**segment.locator, LINES: table}))
    return located
