"""Ruled tables of a PDF page as segments of their own, one line per row, every value labelled.

In the page text a table is a run of numbers ("Alabama 18,870 23,022 22,650 859 ..."): a search
for Alabama's handgun checks finds the row, but neither a reader nor the answer engine can tell
which number is the handgun count. Each row is written with its column headings instead:
"State / Territory: Alabama | Permit: 18,870 | Handgun: 23,022 | ...", so every chunk of the
table carries its header and a quote names what its number is. Each row has its box, so a
citation highlights the row; the rows' lines leave the page text (pipeline.extractors.pdf),
titles and notes that span the whole table stay there. A table that goes on over the next page
without repeating its header gets the last one's labels. A title drawn across the top of the
table ("NICS Firearm Background Checks November - 2015") opens every row, so that a row quoted on
its own says what it counts, and a question naming the report finds the row rather than the
title's own line.

The grid is pdfplumber's: its table finder (edges, intersections, cells, tables) runs on the
rulings and frames PDFium reports for the page's path objects, and the cells' text is PDFium's.
pdfplumber's own page layout (pdfminer) costs 100-500 ms a page, over a second on a page of
mathematics, and spreads letter-spaced cells ("0 3 / 2 5 / 2 0 16"); this costs a few
milliseconds on a page that draws anything and nothing on one that does not. A grid drawn as one
path of many segments is not seen (its bounds are one frame): its table stays in the page text.
At most ``ExtractLimits.max_table_pages`` pages of a source are searched for grids.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfplumber.table import Table, cells_to_tables, edges_to_intersections, intersections_to_cells, merge_edges

from pipeline.extractors.pdf_lines import PageFrame, clean_line
from pipeline.line_boxes import Box, rounded

# A ruling is a path thinner than this (points); pdfplumber's default tolerances are 3 points too.
RULING_THICKNESS = 3.0
_SNAP = 3.0
MIN_EDGES = 6
# Bounds on the grid finder, whose cost grows with the square of the crossings of rulings (an
# 80 x 80 grid, 6,400 crossings, takes 2.4 s): a page drawing more edges or crossings (a map, a
# scatter plot, graph paper, a crafted file) is not searched, and a source stops being searched
# once its pages' crossings pass a budget (about 20 pages of the worst grid searched, some
# 30 s, well inside the extract timeout). nics, the densest table of the corpus, draws 503
# edges that merge into a few dozen rulings.
MAX_EDGES = 20_000
MAX_CROSSINGS = 5_000
MAX_SOURCE_CROSSINGS = 100_000
MIN_ROWS = 2
MIN_COLUMNS = 2
# A grid whose cells are mostly empty is a figure's frames, not a table.
MIN_FILLED_CELLS = 6
# A grid with more than one filled cell in this many cut through by its sides is not a table (the
# corpus tables have none; frames over a page, 7-50 %).
CUT_SHARE = 20
_WIDEN = 1.0
# A value, not a heading: a number, an amount, a share, a date or a time.
_NUMERIC = re.compile(r"^[\s$€£¥(+\-–]*\d[\d.,:/\-\s]*%?\)?\*?$")
# Longer than this, a "heading" is a paragraph a figure's frame made look like a table.
MAX_LABEL_CHARS = 80
MAX_TITLE_CHARS = 120
# Rows apart as paragraphs: the chunker keeps a paragraph break, so each row stays a sentence of
# its own that the answer engine can quote (a single line break becomes a space).
ROW_BREAK = "\n\n"
_SPACES = re.compile(r"\s+")
_ALNUM = re.compile(r"[^\W_]")
# A header line whose text falls into no more than this share of the columns its cell spans is
# the group's label ("2001" over Mill. u$s / Part.), put before each column's own.
_GROUP_SHARE = 0.5

Cells = list[str | None]
Rect = tuple[float, float, float, float]  # pdfplumber's (x0, top, x1, bottom): top-down points


@dataclass(frozen=True)
class PageTable:
    """One table: its rows as text, each row's span in it and box (a line table), the boxes of
    its header and rows, and its title and column labels (for a next page that goes on with it)."""

    text: str
    lines: list[list[float]]
    rows: list[Box]
    labels: list[str]
    title: str


class TableReader:
    """Tables page by page, within ``max_pages`` pages (``ExtractLimits.max_table_pages``) that
    draw something, carrying a table's title and labels to the next page. A page turned in its
    dictionary is left alone: its grid would be read across its rows."""

    def __init__(self, max_pages: int) -> None:
        self._max_pages = max_pages
        self._read = 0
        self._last: tuple[int, PageTable] | None = None  # a page index and its last table
        self._crossings = 0

    def read(self, index: int, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, frame: PageFrame) -> list[PageTable]:
        """The tables of page ``index`` (0-based)."""
        if self._read >= self._max_pages or frame.rotation or self._crossings > MAX_SOURCE_CROSSINGS:
            return []
        page_top = frame.top
        edges = _drawn_edges(page, page_top)
        if not MIN_EDGES <= len(edges) <= MAX_EDGES:
            return []
        self._read += 1
        carried = self._last[1] if self._last and self._last[0] == index - 1 else None
        tables: list[PageTable] = []
        grids, crossings = _grids(edges)
        self._crossings += crossings
        for grid in grids:
            rects: list[list[Rect | None]] = [list(row.cells) for row in grid.rows]
            cells = [[_cell_text(textpage, rect, page_top) if rect else None for rect in row] for row in rects]
            if not _mostly_filled(cells) or _cuts_words(textpage, page_top, cells, rects):
                continue
            reading = _Reading(textpage, page_top, frame)
            table = _table(reading, cells, rects, carried)
            if table is not None:
                tables.append(table)
                carried = table
        if tables:
            self._last = (index, tables[-1])
        return tables


@dataclass(frozen=True)
class _Glyph:
    text: str
    left: float
    top: float
    right: float
    bottom: float  # top-down points, as pdfplumber's rectangles


class _Reading:
    """What the table code asks of one page: text in a rectangle, its lines top to bottom, and
    where things are shown."""

    def __init__(self, textpage: pdfium.PdfTextPage, top: float, frame: PageFrame) -> None:
        self.textpage = textpage
        self.top = top
        self.frame = frame

    def text(self, rect: Rect) -> str:
        return _cell_text(self.textpage, rect, self.top)

    def shown(self, rect: Rect) -> Box:
        x0, top, x1, bottom = rect
        return tuple(rounded(self.frame.shown(x0, self.top - bottom, x1, self.top - top)))  # type: ignore[return-value]

    @cached_property
    def _glyphs(self) -> list[_Glyph]:
        """Every visible character of the page with its box (read once, for a page with a table:
        PDFium's bounded text comes in drawing order, and a heading may be drawn below its line)."""
        glyphs: list[_Glyph] = []
        box = pdfium_c.FS_RECTF()
        handle = self.textpage.raw
        for index in range(pdfium_c.FPDFText_CountChars(handle)):
            code = pdfium_c.FPDFText_GetUnicode(handle, index)
            # The loose box spans the font's ascent to descent: one height for a whole line.
            if code <= 32 or not pdfium_c.FPDFText_GetLooseCharBox(handle, index, box):
                continue
            glyphs.append(_Glyph(chr(code), box.left, self.top - box.top, box.right, self.top - box.bottom))
        return glyphs

    def lines(self, rect: Rect) -> list[list[_Glyph]]:
        """The characters inside ``rect`` as lines, top to bottom, each left to right."""
        inside = [
            glyph for glyph in self._glyphs
            if rect[0] <= (glyph.left + glyph.right) / 2 <= rect[2] and rect[1] <= (glyph.top + glyph.bottom) / 2 <= rect[3]
        ]
        lines: list[list[_Glyph]] = []
        for glyph in sorted(inside, key=lambda glyph: (glyph.top + glyph.bottom) / 2):
            middle, height = (glyph.top + glyph.bottom) / 2, glyph.bottom - glyph.top
            if lines and abs(middle - (lines[-1][0].top + lines[-1][0].bottom) / 2) < max(height, 1.0) / 2:
                lines[-1].append(glyph)
            else:
                lines.append([glyph])
        return [sorted(line, key=lambda glyph: glyph.left) for line in lines]


def _spoken(glyphs: list[_Glyph]) -> str:
    """Characters of one line as text: a space where the gap is wider than a fifth of their height."""
    text = ""
    for previous, glyph in zip([None, *glyphs], glyphs):
        if previous is not None and glyph.left - previous.right > (glyph.bottom - glyph.top) / 5:
            text += " "
        text += glyph.text
    return text


def _drawn_edges(page: pdfium.PdfPage, top: float) -> list[dict[str, Any]]:
    """pdfplumber's edges (top-down coordinates) from the bounds of PDFium's path objects: a thin
    path is a ruling, a wider one a frame with four sides."""
    edges: list[dict[str, Any]] = []

    def across(y: float, x0: float, x1: float) -> None:
        edges.append({"x0": x0, "x1": x1, "top": top - y, "bottom": top - y, "width": x1 - x0, "height": 0.0, "orientation": "h"})

    def down(x: float, y0: float, y1: float) -> None:
        edges.append({"x0": x, "x1": x, "top": top - y1, "bottom": top - y0, "width": 0.0, "height": y1 - y0, "orientation": "v"})

    for path in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=3):
        if len(edges) > MAX_EDGES:
            break  # a map or a plot, not a table: the caller skips the page
        left, bottom, right, upper = path.get_bounds()
        width, height = right - left, upper - bottom
        if height < RULING_THICKNESS and width > _SNAP:
            across((bottom + upper) / 2, left, right)
        elif width < RULING_THICKNESS and height > _SNAP:
            down((left + right) / 2, bottom, upper)
        elif width >= RULING_THICKNESS and height >= RULING_THICKNESS:
            across(bottom, left, right)
            across(upper, left, right)
            down(left, bottom, upper)
            down(right, bottom, upper)
    return edges


def _grids(edges: list[dict[str, Any]]) -> tuple[list[Table], int]:
    """pdfplumber's tables (with its default tolerances) of three rows and two columns or more,
    and how many crossings of rulings the search could meet (none searched past the cap)."""
    merged = [
        edge for edge in merge_edges(edges, _SNAP, _SNAP, _SNAP, _SNAP)
        if edge["width" if edge["orientation"] == "h" else "height"] >= _SNAP
    ]
    across = sum(edge["orientation"] == "h" for edge in merged)
    crossings = across * (len(merged) - across)
    if crossings > MAX_CROSSINGS:
        return [], 0
    cells = intersections_to_cells(edges_to_intersections(merged, _SNAP, _SNAP))
    return [
        Table(None, group) for group in cells_to_tables(cells)
        if len({cell[1] for cell in group}) > MIN_ROWS and len({cell[0] for cell in group}) >= MIN_COLUMNS
    ], crossings


def _mostly_filled(cells: list[Cells]) -> bool:
    present = [cell for row in cells for cell in row if cell is not None]
    filled = sum(1 for cell in present if cell.strip())
    return filled >= MIN_FILLED_CELLS and filled * 2 >= len(present)


def _cuts_words(textpage: pdfium.PdfTextPage, page_top: float, cells: list[Cells], rects: list[list[Rect | None]]) -> bool:
    """Whether the grid's lines run through text: frames drawn over a page's columns, not a table's
    cells, whose text keeps clear of the rulings. A cell that reads differently when widened by
    a point on each side has a character on its side."""
    filled = [(cell, rect) for row, row_rects in zip(cells, rects) for cell, rect in zip(row, row_rects) if cell and rect]
    cut = sum(
        1 for cell, (x0, top, x1, bottom) in filled
        if _cell_text(textpage, (x0 - _WIDEN, top, x1 + _WIDEN, bottom), page_top) != cell
    )
    return cut * CUT_SHARE > len(filled)


def _cell_text(textpage: pdfium.PdfTextPage, rect: Rect, page_top: float) -> str:
    x0, top, x1, bottom = rect
    raw = textpage.get_text_bounded(left=x0, bottom=page_top - bottom, right=x1, top=page_top - top)
    return "\n".join(line for line in (clean_line(part).strip() for part in re.split(r"\r\n|\r|\n", raw)) if line)


def _table(
    reading: _Reading, cells: list[Cells], rects: list[list[Rect | None]], carried: PageTable | None
) -> PageTable | None:
    if len(cells[0]) < MIN_COLUMNS:
        return None
    inner = [index for index, row in enumerate(cells) if not _spans_table(row)]
    if not inner:
        return None
    header_end = _header_end(cells, inner)
    header = [index for index in inner if index < header_end]
    continued = carried is not None and not header and len(carried.labels) == len(cells[0])
    if header:
        labels = _labels(reading, [cells[index] for index in header], [rects[index] for index in header], _columns(rects))
    else:
        labels = carried.labels if carried is not None and continued else [""] * len(cells[0])
    if any(len(label) > MAX_LABEL_CHARS or (label and not _ALNUM.search(label)) for label in labels):
        return None  # a figure's frame: paragraphs or symbols for headings
    title = " ".join(_flat(cells[index][0]) for index in range(inner[0]) if _flat(cells[index][0]))[:MAX_TITLE_CHARS]
    if carried is not None and continued:
        title = carried.title
    rows: list[tuple[str, Rect]] = []
    for index in inner:
        if index < header_end:
            continue
        for values, rect in _split(reading, cells[index], rects[index]):
            text = " | ".join(
                f"{label}: {value}" if label else value for label, value in zip(labels, values) if value
            )
            if text:
                rows.append((f"{title} · {text}" if title else text, rect))
    if len(rows) < MIN_ROWS:
        return None
    lines: list[list[float]] = []
    offset = 0
    for text, rect in rows:
        lines.append([offset, offset + len(text), *reading.shown(rect)])
        offset += len(text) + len(ROW_BREAK)
    header_boxes = [reading.shown(_row_rect(rects[index])) for index in header]
    return PageTable(
        ROW_BREAK.join(text for text, _ in rows), lines, header_boxes + [tuple(line[2:]) for line in lines], labels, title
    )


def _columns(rects: list[list[Rect | None]]) -> list[Rect]:
    """Each column's extent: its narrowest cell that is not merged with the next (pdfplumber's
    own columns widen with every cell merged across them)."""
    width = len(rects[0])
    columns: list[Rect] = []
    for index in range(width):
        alone = [
            row[index] for row in rects
            if row[index] is not None and (index + 1 == width or row[index + 1] is not None)
        ]
        candidates = alone or [row[index] for row in rects if row[index] is not None] or [(0.0, 0.0, 0.0, 0.0)]
        columns.append(min(candidates, key=lambda rect: rect[2] - rect[0]))
    return columns


def _spans_table(row: Cells) -> bool:
    """A title or a note: one cell across the whole table (or an empty row)."""
    return all(cell is None for cell in row[1:]) or not any((cell or "").strip() for cell in row)


def _header_end(cells: list[Cells], inner: list[int]) -> int:
    """The first row of data: the first whose values (after the row's label) are mostly numbers,
    dates or times (the first row itself on a page that goes on with a table); without such rows,
    the row after the first."""
    for index in inner[:5]:
        values = [_flat(cell) for cell in cells[index][1:] if _flat(cell)]
        if values and sum(bool(_NUMERIC.match(value)) for value in values) * 2 >= len(values):
            return index
    return inner[1] if len(inner) > 1 else inner[0] + 1


def _labels(reading: _Reading, header: list[Cells], rects: list[list[Rect | None]], columns: list[Rect]) -> list[str]:
    """Each column's heading: the header rows' texts above it, a merged cell's group label first."""
    labels: list[list[str]] = [[] for _ in columns]
    for row, row_rects in zip(header, rects):
        for start, cell in enumerate(row):
            if cell is None or not cell.strip():
                continue
            end = start + 1
            while end < len(row) and row[end] is None:
                end += 1
            rect = row_rects[start]
            if end - start == 1 or rect is None:
                labels[start].append(_flat(cell))
                continue
            for column, text in _spread(reading, rect, columns, start, end):
                labels[column].append(text)
    return [" ".join(parts) for parts in labels]


def _spread(reading: _Reading, rect: Rect, columns: list[Rect], start: int, end: int) -> list[tuple[int, str]]:
    """A merged header cell's text given to the columns under it: its last line by the column
    each character stands in; a line above it, or a last line that stands in few of the columns,
    is a group's name ("Pre-Pawn", "Return to Seller - Private Sale") and goes to all of them."""
    lines = reading.lines(rect)
    if not lines:
        return []
    under: dict[int, list[_Glyph]] = {}
    for glyph in lines[-1]:
        middle = (glyph.left + glyph.right) / 2
        column = next((index for index in range(start, end) if columns[index][0] <= middle <= columns[index][2]), None)
        if column is not None:
            under.setdefault(column, []).append(glyph)
    groups = lines[:-1] if len(under) > _GROUP_SHARE * (end - start) else lines
    if groups is lines:
        under = {}
    group = " ".join(_spoken(line) for line in groups)
    return [
        (column, " ".join(part for part in (group, _spoken(under.get(column, []))) if part))
        for column in range(start, end)
    ]


def _split(reading: _Reading, row: Cells, rects: list[Rect | None]) -> list[tuple[list[str], Rect]]:
    """A row as one or more rows of values with their rectangles.

    A report may draw one ruled row around several lines of records ("Alabama\\nAlaska\\n..."
    in every cell): when every filled cell has the same number of lines, each line is a row of
    its own, placed where the page's text lines through the first cell are.
    """
    rect = _row_rect(rects)
    parts = [(cell or "").split("\n") for cell in row]
    counts = {len(lines) for lines, cell in zip(parts, row) if cell and cell.strip()}
    if len(counts) != 1 or (count := counts.pop()) < 2 or len(parts[0]) != count:
        return [([_flat(cell) for cell in row], rect)]
    bands = _bands(reading, rects[0], count) or _even_bands(rect, count)
    return [
        ([_flat(lines[index]) if len(lines) == count else "" for lines in parts], (rect[0], top, rect[2], bottom))
        for index, (top, bottom) in enumerate(bands)
    ]


def _bands(reading: _Reading, cell: Rect | None, count: int) -> list[tuple[float, float]] | None:
    """The vertical extent (top-down points) of each text line of the first cell, when it has
    ``count`` of them."""
    if cell is None:
        return None
    lines = reading.lines(cell)
    if len(lines) != count:
        return None
    return [(min(glyph.top for glyph in line), max(glyph.bottom for glyph in line)) for line in lines]


def _even_bands(rect: Rect, count: int) -> list[tuple[float, float]]:
    height = (rect[3] - rect[1]) / count
    return [(rect[1] + index * height, rect[1] + (index + 1) * height) for index in range(count)]


def _row_rect(rects: Sequence[Rect | None]) -> Rect:
    present = [rect for rect in rects if rect is not None]
    return (
        min(rect[0] for rect in present), min(rect[1] for rect in present),
        max(rect[2] for rect in present), max(rect[3] for rect in present),
    )


def _flat(cell: str | None) -> str:
    return _SPACES.sub(" ", cell or "").strip()
