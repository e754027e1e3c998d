"""A paginated document's pages as segments of clean text, whether its text came from the PDF's
own text layer or from OCR: running headers and footers out (``page_furniture``), printed page
numbers as labels where the document defines none, the reference list marked
(``reference_lists``), and each segment's line table (``pipeline.line_boxes``) built from the
lines that stayed, so that no line left out can lend its box to a body line of the same text.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.extractors.page_furniture import remove_running_lines
from pipeline.extractors.pdf_lines import PageLine, line_table, page_text
from pipeline.extractors.reference_lists import mark_reference_lists
from pipeline.line_boxes import LINES
from pipeline.types import Segment


@dataclass(frozen=True)
class CleanDocument:
    segments: list[Segment]
    """Page by page, each with its line table."""
    locators: dict[int, dict[str, object]]
    """Every page's locator (page, label and ``extra``), for segments added beside the text."""


def clean_document(
    pages: dict[int, list[PageLine]],
    *,
    defined_labels: dict[int, str],
    extra: dict[str, object] | None = None,
    printed_labels: bool = True,
) -> CleanDocument:
    """``pages``: physical page number → its lines. ``defined_labels``: the labels the document
    itself gives its pages; printed page numbers are used only when it gives none and
    ``printed_labels`` allows. ``extra`` goes into every locator (the OCR engine)."""
    clean = remove_running_lines({number: [line.text for line in lines] for number, lines in pages.items()})
    kept = {number: [pages[number][index] for index in indexes] for number, indexes in clean.kept.items()}
    labels = defined_labels if any(defined_labels.values()) else clean.labels if printed_labels else {}
    locators: dict[int, dict[str, object]] = {
        number: {"page": number, **(extra or {}), **({"page_label": labels[number]} if labels.get(number) else {})}
        for number in sorted(pages)
    }
    texts = {number: page_text(kept[number]) for number in locators}
    segments = mark_reference_lists([Segment(texts[number], locators[number]) for number in locators if texts[number]])
    return CleanDocument(_with_line_tables(segments, kept), locators)


def _with_line_tables(segments: list[Segment], lines: dict[int, list[PageLine]]) -> list[Segment]:
    """Each segment with the line table of its lines, found in page order."""
    cursors: dict[int, int] = {}
    located: list[Segment] = []
    for segment in segments:
        page = segment.locator["page"]
        table, cursors[page] = line_table(segment.text, lines[page], cursors.get(page, 0))
        located.append(Segment(segment.text, {**segment.locator, LINES: table}))
    return located
