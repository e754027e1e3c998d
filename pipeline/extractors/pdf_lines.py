"""A PDF page's text line by line, each line with the box PDFium draws around its characters.

PDFium's text is one string per page, line breaks included; PDFium translates a place in that
string to its character index, so a line's span is the range to ask PDFium's text rectangles for:
a few calls per line, a fraction of a millisecond a page, where reading every character's box
would cost more than reading the text. The boxes let a citation of a text PDF
highlight the lines it came from (``pipeline.line_boxes``) and let tables take their region
out of the page text (``pipeline.extractors.pdf_tables``).
"""
from __future__ import annotations

import ctypes
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from pipeline.line_boxes import Box, PageLine, rounded
from pipeline.ocr.orientation import box_on_page

# PDFium marks a hyphen it saw at a line end with U+FFFE and joins the lines itself.
_MARKED_HYPHEN = re.compile("\ufffe(.?)", re.DOTALL)
# C0/C1 controls except tab and newline, and U+FFFF: math fonts map glyph pieces to these codes.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\uffff]")
_LINE = re.compile(r"([^\r\n]*)(?:\r\n|\r|\n|$)")


@dataclass(frozen=True)
class PageFrame:
    """The part of the page a viewer shows (the crop box within the media box, inherited from the
    page tree where the page has none) and how far it is turned, to put PDF coordinates (points,
    origin bottom left, unturned) where the reader sees them."""

    left: float
    bottom: float
    right: float
    top: float
    rotation: int

    @classmethod
    def of(cls, page: pdfium.PdfPage) -> "PageFrame":
        left, bottom, right, top = page.get_bbox()  # get_cropbox() ignores inherited boxes
        return cls(left, bottom, right, top, page.get_rotation() % 360)

    def shown(self, left: float, bottom: float, right: float, top: float) -> Box:
        """A rectangle in PDF coordinates as fractions of the page as the viewer shows it."""
        width, height = (self.right - self.left) or 1.0, (self.top - self.bottom) or 1.0
        unturned = (
            _fraction((left - self.left) / width), _fraction((self.top - top) / height),
            _fraction((right - self.left) / width), _fraction((self.top - bottom) / height),
        )
        if not self.rotation:
            return unturned
        # box_on_page undoes a clockwise turn; showing the page applies one.
        return box_on_page(unturned, (360 - self.rotation) % 360)


def read_lines(textpage: pdfium.PdfTextPage, count: int, frame: PageFrame) -> list[PageLine]:
    """The first ``count`` characters of the page as cleaned lines with their boxes."""
    raw = textpage.get_text_range(0, count) if count else ""
    # PDFium counts its string in UTF-16 units: a character beyond the BMP (mathematical letters)
    # takes two of them and one of Python's.
    units = list(accumulate((2 if ord(char) > 0xFFFF else 1 for char in raw), initial=0)) if _wide(raw) else None
    lines: list[PageLine] = []
    for match in _LINE.finditer(raw):
        start, end = match.span(1)
        text = clean_line(raw[start:end])
        box = None
        if text.strip():
            first, last = (units[start], units[end] - 1) if units else (start, end - 1)
            box = _box(textpage, first, last, frame)
        lines.append(PageLine(text, box))
        if match.end() == len(raw):
            break
    return lines


def page_text(lines: Iterable[PageLine]) -> str:
    """The page's text: its lines, no run of more than one blank line, no blank edges."""
    kept: list[str] = []
    for line in lines:
        if line.text.strip() or (kept and kept[-1].strip()):
            kept.append(line.text)
    return "\n".join(kept).strip()


def clean_line(raw: str) -> str:
    """Resolve marked hyphens, drop control characters and trailing blanks.

    A marked hyphen is dropped only before a lower-case letter ("imple-mented"); before anything
    else it stays a hyphen ("Schwarz-Weiß"), because guessing wrong would corrupt names and
    compounds. Hyphens PDFium did not mark are left alone for the same reason.
    """
    return _CONTROL.sub("", _MARKED_HYPHEN.sub(_resolve_hyphen, raw)).rstrip(" \t")


def _resolve_hyphen(match: re.Match[str]) -> str:
    following = match.group(1)
    return following if following.islower() else "-" + following


def _wide(raw: str) -> bool:
    return bool(raw) and max(raw) > "\uffff"


def _box(textpage: pdfium.PdfTextPage, first: int, last: int, frame: PageFrame) -> Box | None:
    """The union of PDFium's text rectangles over a line (``first``..``last``: places in its
    string), as shown; None when PDFium cannot place the line (a character it made up).

    The raw calls with four reused doubles are a third of the cost of pypdfium2's ``get_rect``,
    which allocates them per rectangle, on pages of mathematics with a rectangle per symbol.
    """
    start = pdfium_c.FPDFText_GetCharIndexFromTextIndex(textpage, first)
    end = pdfium_c.FPDFText_GetCharIndexFromTextIndex(textpage, last)
    if start < 0 or end < start:
        return None
    count = pdfium_c.FPDFText_CountRects(textpage, start, end - start + 1)
    if count <= 0:
        return None
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    pointers = [ctypes.byref(value) for value in (left, top, right, bottom)]
    handle, get_rect = textpage.raw, pdfium_c.FPDFText_GetRect
    lefts, tops, rights, bottoms = [], [], [], []
    for index in range(count):
        get_rect(handle, index, *pointers)
        lefts.append(left.value)
        tops.append(top.value)
        rights.append(right.value)
        bottoms.append(bottom.value)
    shown = frame.shown(min(lefts), min(bottoms), max(rights), max(tops))
    return tuple(rounded(shown))  # type: ignore[return-value]


def _fraction(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def line_table(text: str, lines: list[PageLine], cursor: int = 0) -> tuple[list[list[float]], int]:
    """The line table (``pipeline.line_boxes``) of ``text``, a segment made of ``lines`` in order,
    some left out (running headers, a table's rows); and the index of the first line not used, for
    the page's next segment. A line is recognised by its text; one not found has no box.
    """
    table: list[list[float]] = []
    offset = 0
    for part in text.split("\n"):
        wanted = part.strip()
        if wanted:
            found = next((index for index in range(cursor, len(lines)) if lines[index].text.strip() == wanted), None)
            if found is not None:
                cursor = found + 1
                box = lines[found].box
                if box is not None:
                    lead = len(part) - len(part.lstrip())
                    table.append([offset + lead, offset + lead + len(wanted), *box])
        offset += len(part) + 1
    return table, cursor
