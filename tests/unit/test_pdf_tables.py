"""Ruled tables of corpus PDFs become segments of their own: one row per line, every value with
its column's heading (a merged group heading included), a box per row, the rows out of the page
text; a table going on over the next page keeps its headings; figures' frames are no tables, and
the page cap holds."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pdfplumber
import pytest
from support.bombs import write_pdf

from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits
from pipeline.line_boxes import LINES
from pipeline.types import Extraction

NICS = "nics-background-checks-2015-11.pdf"


def _extracted(corpus_dir: Path, name: str, limits: ExtractLimits = ExtractLimits()) -> Extraction:
    return extract((corpus_dir / "pdf" / name).read_bytes(), filename=name, mime="application/pdf", limits=limits)


def _tables(extraction: Extraction) -> list:
    return [segment for segment in extraction.segments if "table" in segment.locator]


def test_each_row_of_the_nics_table_names_its_columns(corpus_dir: Path) -> None:
    extraction = _extracted(corpus_dir, NICS)
    (table,) = _tables(extraction)
    assert table.locator["page"] == 1 and table.locator["table"] == 1
    rows = table.text.split("\n\n")
    assert len(rows) == 56  # 50 states, DC, Guam, Mariana Islands, Puerto Rico, Virgin Islands, Totals... one per line
    alabama = rows[0]
    assert alabama.startswith(
        "NICS Firearm Background Checks November - 2015 · State / Territory: Alabama | Permit: 18,870 | Handgun: 23,022 | Long Gun: 22,650"
    )
    assert "Pre-Pawn Handgun: 14" in alabama and "Return to Seller - Private Sale Handgun: 3" in alabama
    assert alabama.endswith("Totals: 71,137")
    assert any(row.startswith("NICS Firearm Background Checks November - 2015 · State / Territory: Wyoming |") for row in rows)


def test_a_table_row_has_the_box_of_its_printed_row(corpus_dir: Path) -> None:
    extraction = _extracted(corpus_dir, NICS)
    (table,) = _tables(extraction)
    lines = table.locator[LINES]
    assert len(lines) == len(table.text.split("\n\n"))
    with pdfplumber.open(corpus_dir / "pdf" / NICS) as pdf:
        page = pdf.pages[0]
        for word in ("Alabama", "Kentucky", "Wyoming"):
            row = next(line for line in lines if f"· State / Territory: {word} |" in table.text[line[0]:line[1]])
            printed = next(w for w in page.extract_words() if w["text"] == word)
            left, top, right, bottom = row[2:]
            middle = ((printed["top"] + printed["bottom"]) / 2) / page.height
            assert top < middle < bottom and left <= printed["x0"] / page.width and right > 0.9
            assert bottom - top < 0.03  # one printed row, not the ruled band of five


def test_the_rows_leave_the_page_text_and_titles_stay(corpus_dir: Path) -> None:
    extraction = _extracted(corpus_dir, NICS)
    (text,) = [segment for segment in extraction.segments if "table" not in segment.locator]
    assert "NICS Firearm Background Checks" in text.text and "DISCLAIMERS" in text.text
    assert "23,022" not in text.text and "Alabama" not in text.text


def test_a_table_going_on_over_the_next_page_keeps_its_headings(corpus_dir: Path) -> None:
    tables = _tables(_extracted(corpus_dir, "ca-warn-report.pdf"))
    second = next(table for table in tables if table.locator["page"] == 2)
    assert len(second.locator[LINES]) == len(second.text.split("\n\n"))
    assert second.text.startswith("Notice Date: 07/17/2015 | Effective: 09/18/2015 | Received: 07/21/2015 | Company: Boeing Company")


def test_pages_without_tables_and_the_page_cap(corpus_dir: Path) -> None:
    assert not _tables(_extracted(corpus_dir, "dmca.pdf"))
    capped = _extracted(corpus_dir, NICS, replace(ExtractLimits(), max_table_pages=0))
    assert not _tables(capped) and "23,022" in capped.segments[0].text  # the table stays in the page's text


def test_frames_of_figures_are_not_taken_for_tables(corpus_dir: Path) -> None:
    """A figure of symbols in a frame (tableformer, page 3) and frames drawn over a page's text
    (tracemonkey) make no tables, while the tables beside them do."""
    tables = _tables(_extracted(corpus_dir, "tableformer-2203.00274.pdf"))
    assert "Nation: Great Britain | Gold: 2 | Silver: 1 | Bronze: 2" in "\n".join(table.text for table in tables)
    assert not any("⬤" in table.text for table in tables)
    assert not _tables(_extracted(corpus_dir, "tracemonkey.pdf"))


def _drawing_heavy_page(lines: int) -> bytes:
    """A one-page PDF with a line of text and ``lines`` short strokes scattered over it (a plot,
    a map, or a file made to make the grid finder work quadratically)."""
    import ctypes
    import io
    import random

    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    document = pdfium.PdfDocument.new()
    page = document.new_page(600, 800)
    text = pdfium_c.FPDFPageObj_NewTextObj(document, b"Helvetica", 12.0)
    line = "A scatter plot of thirty thousand strokes"
    pdfium_c.FPDFText_SetText(text, (ctypes.c_ushort * (len(line) + 1))(*map(ord, line), 0))  # UTF-16, NUL-ended
    pdfium_c.FPDFPageObj_Transform(text, 1, 0, 0, 1, 50, 750)
    pdfium_c.FPDFPage_InsertObject(page, text)
    scatter = random.Random(3)
    for index in range(lines):
        x, y = scatter.uniform(0, 590), scatter.uniform(0, 700)
        path = pdfium_c.FPDFPageObj_CreateNewPath(x, y)
        pdfium_c.FPDFPath_LineTo(path, x + (8 if index % 2 else 0.5), y + (0.5 if index % 2 else 8))
        pdfium_c.FPDFPath_SetDrawMode(path, 0, True)
        pdfium_c.FPDFPage_InsertObject(page, path)
    pdfium_c.FPDFPage_GenerateContent(page)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_a_page_drawing_too_much_is_not_searched_for_tables(monkeypatch) -> None:
    import pipeline.extractors.pdf_grids as grids

    def no_grids(edges):  # type: ignore[no-untyped-def]
        raise AssertionError(f"the grid finder ran on {len(edges)} edges")

    monkeypatch.setattr(grids, "grids", no_grids)
    extraction = extract(_drawing_heavy_page(30_000), filename="plot.pdf", mime="application/pdf", limits=ExtractLimits())
    assert extraction.segments[0].text == "A scatter plot of thirty thousand strokes"
    assert not _tables(extraction)


def _ruled_page_with_notes_beside() -> bytes:
    """A PDF whose one page inherits its A4 media box from the page tree and draws a ruled table
    (a header and three rows) with a note on each row's baseline to the right of the table."""
    rows = [("Name", "Count", "Share"), ("Alpha", "12", "30%"), ("Beta", "7", "18%"), ("Gamma", "21", "52%")]
    content = bytearray()
    for index, cells in enumerate(rows):
        baseline = 705 - 20 * index
        for column, value in enumerate(cells):
            content += b"BT /F1 10 Tf %d %d Td (%s) Tj ET\n" % (55 + 100 * column, baseline, value.encode())
        if index:
            content += b"BT /F1 10 Tf 400 %d Td (side note %d keeps going) Tj ET\n" % (baseline, index)
    for y in range(620, 721, 20):
        content += b"50 %d m 350 %d l S\n" % (y, y)
    for x in range(50, 351, 100):
        content += b"%d 640 m %d 720 l S\n" % (x, x)
    return write_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 /MediaBox [0 0 595 842] >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + bytes(content) + b"\nendstream",
    ])


def test_text_beside_a_table_stays_and_boxes_follow_an_inherited_media_box() -> None:
    """Review findings: PDFium joins a row's line with a note printed beside the table, and that
    line must not leave the page text with the row; a page without its own media box is placed
    by its page tree's (A4 here, not the Letter size PDFium's crop box call assumes)."""
    extraction = extract(_ruled_page_with_notes_beside(), filename="t.pdf", mime="application/pdf", limits=ExtractLimits())
    (table,) = _tables(extraction)
    assert table.text.split("\n\n") == [
        "Name: Alpha | Count: 12 | Share: 30%", "Name: Beta | Count: 7 | Share: 18%", "Name: Gamma | Count: 21 | Share: 52%",
    ]
    text = "\n".join(segment.text for segment in extraction.segments if "table" not in segment.locator)
    assert all(f"side note {row} keeps going" in text for row in (1, 2, 3)), text
    alpha = table.locator[LINES][0]
    assert alpha[2:] == pytest.approx([50 / 595, (842 - 700) / 842, 350 / 595, (842 - 680) / 842], abs=0.002)
