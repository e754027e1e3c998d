"""A page's drawn grids and the text in their cells, read through PDFium.

pdfplumber's table finder (edges, intersections, cells, tables) runs on the rulings and frames
PDFium reports for the page's path objects, and the cells' text is PDFium's: pdfplumber's own
page layout (pdfminer) costs 100-500 ms a page, over a second on a page of mathematics, and
spreads letter-spaced cells ("0 3 / 2 5 / 2 0 16"). A grid drawn as one path of many segments is
not seen (its bounds are one frame). ``pipeline.extractors.pdf_tables`` writes the tables.
"""
from __future__ import annotations

import re
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
MIN_GRID_ROWS = 2
MIN_GRID_COLUMNS = 2
# A grid whose cells are mostly empty is a figure's frames, not a table.
MIN_FILLED_CELLS = 6
# A grid with more than one filled cell in this many cut through by its sides is not a table (the
# corpus tables have none; frames over a page, 7-50 %).
CUT_SHARE = 20
_WIDEN = 1.0

Cells = list[str | None]
Rect = tuple[float, float, float, float]  # pdfplumber's (x0, top, x1, bottom): top-down points


@dataclass(frozen=True)
class Glyph:
    text: str
    left: float
    top: float
    right: float
    bottom: float  # top-down points, as pdfplumber's rectangles


class PageReading:
    """What the table code asks of one page: text in a rectangle, its lines top to bottom, and
    where things are shown."""

    def __init__(self, textpage: pdfium.PdfTextPage, top: float, frame: PageFrame) -> None:
        self.textpage = textpage
        self.top = top
        self.frame = frame

    def text(self, rect: Rect) -> str:
        return cell_text(self.textpage, rect, self.top)

    def shown(self, rect: Rect) -> Box:
        x0, top, x1, bottom = rect
        return tuple(rounded(self.frame.shown(x0, self.top - bottom, x1, self.top - top)))  # type: ignore[return-value]

    @cached_property
    def _glyphs(self) -> list[Glyph]:
        """Every visible character of the page with its box (read once, for a page with a table:
        PDFium's bounded text comes in drawing order, and a heading may be drawn below its line)."""
        glyphs: list[Glyph] = []
        box = pdfium_c.FS_RECTF()
        handle = self.textpage.raw
        for index in range(pdfium_c.FPDFText_CountChars(handle)):
            code = pdfium_c.FPDFText_GetUnicode(handle, index)
            # The loose box spans the font's ascent to descent: one height for a whole line.
            if code <= 32 or not pdfium_c.FPDFText_GetLooseCharBox(handle, index, box):
                continue
            glyphs.append(Glyph(chr(code), box.left, self.top - box.top, box.right, self.top - box.bottom))
        return glyphs

    def lines(self, rect: Rect) -> list[list[Glyph]]:
        """The characters inside ``rect`` as lines, top to bottom, each left to right."""
        inside = [
            glyph for glyph in self._glyphs
            if rect[0] <= (glyph.left + glyph.right) / 2 <= rect[2] and rect[1] <= (glyph.top + glyph.bottom) / 2 <= rect[3]
        ]
        lines: list[list[Glyph]] = []
        for glyph in sorted(inside, key=lambda glyph: (glyph.top + glyph.bottom) / 2):
            middle, height = (glyph.top + glyph.bottom) / 2, glyph.bottom - glyph.top
            if lines and abs(middle - (lines[-1][0].top + lines[-1][0].bottom) / 2) < max(height, 1.0) / 2:
                lines[-1].append(glyph)
            else:
                lines.append([glyph])
        return [sorted(line, key=lambda glyph: glyph.left) for line in lines]


def spoken(glyphs: list[Glyph]) -> str:
    """Characters of one line as text: a space where the gap is wider than a fifth of their height."""
    text = ""
    for previous, glyph in zip([None, *glyphs], glyphs):
        if previous is not None and glyph.left - previous.right > (glyph.bottom - glyph.top) / 5:
            text += " "
        text += glyph.text
    return text


def drawn_edges(page: pdfium.PdfPage, top: float) -> list[dict[str, Any]]:
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


def grids(edges: list[dict[str, Any]]) -> tuple[list[Table], int]:
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
        if len({cell[1] for cell in group}) > MIN_GRID_ROWS and len({cell[0] for cell in group}) >= MIN_GRID_COLUMNS
    ], crossings


def mostly_filled(cells: list[Cells]) -> bool:
    present = [cell for row in cells for cell in row if cell is not None]
    filled = sum(1 for cell in present if cell.strip())
    return filled >= MIN_FILLED_CELLS and filled * 2 >= len(present)


def cuts_words(textpage: pdfium.PdfTextPage, page_top: float, cells: list[Cells], rects: list[list[Rect | None]]) -> bool:
    """Whether the grid's lines run through text: frames drawn over a page's columns, not a table's
    cells, whose text keeps clear of the rulings. A cell that reads differently when widened by
    a point on each side has a character on its side."""
    filled = [(cell, rect) for row, row_rects in zip(cells, rects) for cell, rect in zip(row, row_rects) if cell and rect]
    cut = sum(
        1 for cell, (x0, top, x1, bottom) in filled
        if cell_text(textpage, (x0 - _WIDEN, top, x1 + _WIDEN, bottom), page_top) != cell
    )
    return cut * CUT_SHARE > len(filled)


def cell_text(textpage: pdfium.PdfTextPage, rect: Rect, page_top: float) -> str:
    x0, top, x1, bottom = rect
    raw = textpage.get_text_bounded(left=x0, bottom=page_top - bottom, right=x1, top=page_top - top)
    return "\n".join(line for line in (clean_line(part).strip() for part in re.split(r"\r\n|\r|\n", raw)) if line)


