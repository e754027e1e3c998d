"""PDF page text through PDFium (pypdfium2): one segment per page, located by physical page,
each line with its box; a page's ruled tables as segments of their own.

PDFium reads page text 55-200x faster than pdfplumber's ``extract_text`` and spaces words better
(STACK.md), so it does the bulk work here, line boxes included (pipeline.extractors.pdf_lines);
pdfplumber's table finder finds the grids of tables (pipeline.extractors.pdf_tables).
"""
from __future__ import annotations

import logging
import re
from contextlib import closing

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from pipeline.extractors.base import Extractor, extension
from pipeline.extractors.limits import CharBudget, ExtractLimits
from pipeline.extractors.clean_pages import DocumentPages
from pipeline.extractors.pdf_lines import PageFrame, PageLine, page_text, read_lines
from pipeline.extractors.pdf_tables import PageTable, TableReader
from pipeline.pdfium_lock import PDFIUM_LOCK
from pipeline.line_boxes import LINES
from pipeline.types import Extraction, PipelineError, Segment

PDF_MIMES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})

# Producers often write the source file name or a placeholder into /Title; as a citation's title
# that is worse than none (callers fall back to the attachment's own name).
_FILENAME_TITLE = re.compile(
    r"\.(pdf|docx?|odt|odp|ods|pptx?|xlsx?|rtf|txt|tex|dvi|ps|indd|html?|md|jpe?g|png|tiff?|wpd)$",
    re.IGNORECASE,
)
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "title", "document"}
# How far (a fraction of the page) a line's box may stand out of a table row and still be the row's.
_ROW_SLACK = 0.004

log = logging.getLogger(__name__)


class PdfExtractor(Extractor):
    """Text layer of each page; pages without one are listed for OCR instead of indexed empty."""

    name = "pdf"

    def score(self, mime: str, filename: str) -> int:
        if mime in PDF_MIMES:
            return 10
        return 5 if extension(filename) == "pdf" else 0

    def extract(
        self,
        data: bytes,
        *,
        filename: str,
        mime: str,
        url: str | None = None,
        declared_charset: str | None = None,
        limits: ExtractLimits,
    ) -> Extraction:
        with PDFIUM_LOCK:
            try:
                document = pdfium.PdfDocument(data)
            except pdfium.PdfiumError as error:
                raise _load_error(error, filename) from None
            with closing(document):
                try:
                    return _read(document, CharBudget(limits), TableReader(limits.max_table_pages))
                except PipelineError:
                    raise
                except Exception as error:  # a native library fails in many ways; none may escape
                    raise PipelineError("PDF_CORRUPT", f"{filename[:200]}: {error}") from error


def _load_error(error: pdfium.PdfiumError, filename: str) -> PipelineError:
    """Classify PDFium's load failure: a password or security handler, or unreadable bytes."""
    if getattr(error, "err_code", None) in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
        return PipelineError("PDF_ENCRYPTED", f"{filename[:200]} is encrypted and needs a password")
    return PipelineError("PDF_CORRUPT", f"{filename[:200]} is not a readable PDF ({error})")


def _read(document: pdfium.PdfDocument, budget: CharBudget, tables: TableReader) -> Extraction:
    """Every page's clean text (pipeline.extractors.clean_pages: no running headers and footers,
    printed labels, the reference list marked, a line table per segment), its tables as segments
    of their own (pipeline.extractors.pdf_tables) after its text; close each page at once. When
    pages wait for OCR, the extraction keeps the pages uncleaned too, for the OCR pass to clean the
    whole document once it has read them.

    The page count is the page tree's own claim, so a tree claiming 200,000 pages is refused
    before any page is loaded; a page is read only up to the per-page cap.
    """
    lines: dict[int, list[PageLine]] = {}
    page_tables: dict[int, list[PageTable]] = {}
    needing_ocr: list[int] = []
    page_count = len(document)
    budget.check_pages(page_count)
    for index in range(page_count):
        with closing(document[index]) as page, closing(page.get_textpage()) as textpage:
            wanted = budget.page_chars(index + 1, textpage.count_chars())
            frame = PageFrame.of(page)
            page_lines = read_lines(textpage, wanted, frame)
            found = _tables(tables, index, page, textpage, frame) if any(line.text for line in page_lines) else []
        if sum(len(table.text) for table in found) > budget.limits.max_page_chars:
            found = []  # rows repeat their headings: past the page cap, the page keeps its text
        if found:
            page_tables[index + 1] = found
            page_lines = _outside(page_lines, found)
        text = page_text(page_lines)
        budget.spend(len(text) + sum(len(table.text) for table in found))
        if text or found:
            lines[index + 1] = page_lines
        else:
            needing_ocr.append(index + 1)
    document_pages = DocumentPages(
        lines,
        defined_labels={number: document.get_page_label(number - 1) for number in range(1, page_count + 1)},
        tables={number: _table_segments(found) for number, found in page_tables.items()},
    )
    return Extraction(
        mime="application/pdf",
        segments=document_pages.segments(),
        title=_title(document),
        page_count=page_count,
        pages_needing_ocr=needing_ocr,
        truncated_pages=budget.truncated_pages,
        pages=document_pages if needing_ocr else None,
    )


def _tables(tables: TableReader, index: int, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, frame: PageFrame) -> list[PageTable]:
    """The page's tables; a failure of the table search costs the page its tables, not the
    source its text (the page keeps them as text)."""
    try:
        return tables.read(index, page, textpage, frame)
    except Exception:  # noqa: BLE001 - pdfplumber's geometry on whatever a page draws
        log.exception("table search failed on page %d", index + 1)
        return []


def _outside(lines: list[PageLine], tables: list[PageTable]) -> list[PageLine]:
    """The page's lines less those lying within a row of a table, which the table's own segment
    holds; a line reaching out of the row (text beside the table, joined to the row's line by
    PDFium) stays, a duplicate of the row's figures being better than losing the text."""
    rows = [row for table in tables for row in table.rows]

    def within(line: PageLine) -> bool:
        if line.box is None:
            return False
        left, top, right, bottom = line.box
        return any(
            left >= row[0] - _ROW_SLACK and right <= row[2] + _ROW_SLACK
            and top >= row[1] - _ROW_SLACK and bottom <= row[3] + _ROW_SLACK
            for row in rows
        )

    return [line for line in lines if not within(line)]


def _table_segments(tables: list[PageTable]) -> list[Segment]:
    """A page's tables as segments, numbered on the page."""
    return [Segment(table.text, {"table": ordinal, LINES: table.lines}) for ordinal, table in enumerate(tables, start=1)]


def _title(document: pdfium.PdfDocument) -> str | None:
    """The document's /Title unless it is empty, a file name or a placeholder."""
    title = " ".join(document.get_metadata_dict().get("Title", "").split())
    if not title or _FILENAME_TITLE.search(title) or title.lower() in _PLACEHOLDER_TITLES:
        return None
    return title[:500]
