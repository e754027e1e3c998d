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

The grids and their cells' text come from ``pipeline.extractors.pdf_grids`` (pdfplumber's table
finder on PDFium's drawing); this module decides which grids are tables and writes them. At most
``ExtractLimits.max_table_pages`` pages of a source are searched for grids.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium

from pipeline.extractors import pdf_grids
from pipeline.extractors.pdf_grids import MIN_GRID_COLUMNS, MIN_GRID_ROWS, Cells, Glyph, PageReading, Rect, spoken
from pipeline.extractors.pdf_lines import PageFrame
from pipeline.line_boxes import Box

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
        if self._read >= self._max_pages or frame.rotation or self._crossings > pdf_grids.MAX_SOURCE_CROSSINGS:
            return []
        page_top = frame.top
        edges = pdf_grids.drawn_edges(page, page_top)
        if not pdf_grids.MIN_EDGES <= len(edges) <= pdf_grids.MAX_EDGES:
            return []
        self._read += 1
        carried = self._last[1] if self._last and self._last[0] == index - 1 else None
        tables: list[PageTable] = []
        grids, crossings = pdf_grids.grids(edges)
        self._crossings += crossings
        for grid in grids:
            rects: list[list[Rect | None]] = [list(row.cells) for row in grid.rows]
            cells = [[pdf_grids.cell_text(textpage, rect, page_top) if rect else None for rect in row] for row in rects]
            if not pdf_grids.mostly_filled(cells) or pdf_grids.cuts_words(textpage, page_top, cells, rects):
                continue
            reading = PageReading(textpage, page_top, frame)
            table = _table(reading, cells, rects, carried)
            if table is not None:
                tables.append(table)
                carried = table
        if tables:
            self._last = (index, tables[-1])
        return tables


def _table(
    reading: PageReading, cells: list[Cells], rects: list[list[Rect | None]], carried: PageTable | None
) -> PageTable | None:
    if len(cells[0]) < MIN_GRID_COLUMNS:
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
    if len(rows) < MIN_GRID_ROWS:
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


def _labels(reading: PageReading, header: list[Cells], rects: list[list[Rect | None]], columns: list[Rect]) -> list[str]:
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


def _spread(reading: PageReading, rect: Rect, columns: list[Rect], start: int, end: int) -> list[tuple[int, str]]:
    """A merged header cell's text given to the columns under it: its last line by the column
    each character stands in; a line above it, or a last line that stands in few of the columns,
    is a group's name ("Pre-Pawn", "Return to Seller - Private Sale") and goes to all of them."""
    lines = reading.lines(rect)
    if not lines:
        return []
    under: dict[int, list[Glyph]] = {}
    for glyph in lines[-1]:
        middle = (glyph.left + glyph.right) / 2
        column = next((index for index in range(start, end) if columns[index][0] <= middle <= columns[index][2]), None)
        if column is not None:
            under.setdefault(column, []).append(glyph)
    groups = lines[:-1] if len(under) > _GROUP_SHARE * (end - start) else lines
    if groups is lines:
        under = {}
    group = " ".join(spoken(line) for line in groups)
    return [
        (column, " ".join(part for part in (group, spoken(under.get(column, []))) if part))
        for column in range(start, end)
    ]


def _split(reading: PageReading, row: Cells, rects: list[Rect | None]) -> list[tuple[list[str], Rect]]:
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


def _bands(reading: PageReading, cell: Rect | None, count: int) -> list[tuple[float, float]] | None:
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
