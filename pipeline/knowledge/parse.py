"""Parse: a paged extraction as pages and blocks in reading order, each block with its kind.

The PDF extractor gives each page's text with a line table (``pipeline.line_boxes``): where each
line sits on the page, in reading order. A block ends where the layout says so: a vertical gap
clearly wider than the page's usual line spacing, a jump to another column, a first line indented
after a finished sentence, a bullet, a caption or a numbered heading. Its kind comes from its text
(``_kind``); an unnumbered heading is a short line standing alone above a paragraph, so it is told
only once its neighbour's kind is known (``_mark_headings``). Text drawn inside figures (small,
scattered labels) and margin stamps set vertically carry no knowledge and are left out, and so
is the reference list (``pipeline.extractors.reference_lists``).

A block's text is its lines joined by spaces, with end-of-line hyphenation undone ("imple-" +
"mented"); code and formulas keep their line breaks. That text is the reference every note's
evidence is checked against (``pipeline.knowledge.checks``), which compares passages with
whitespace and hyphenation normalised, so a quote of the page as printed still matches.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from pipeline.extractors.reference_lists import REFERENCES
from pipeline.knowledge.headings import NUMBERED
from pipeline.knowledge.types import Asset, Block, Page, ParsedDocument
from pipeline.line_boxes import LINES, Box, PageLine
from pipeline.textnorm import STOP_WORDS, fold
from pipeline.types import Extraction, PipelineError, Segment

_BULLET = re.compile(r"^(?:[•·▪◦●○■□‣∙*!–-]\s+|\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})\)\s+|\d{1,2}\.\s+)")
_CAPTION = re.compile(
    r"^(?P<word>Figure|FIGURE|Fig\.?|FIG\.?|Table|TABLE|Tab\.|Listing|Algorithm)\s*"
    r"(?P<number>\d{1,3}|[IVX]{1,5})(?:\.\d+)?\s*[.:|\u2014\u2013-]"
)
_NAMED = re.compile(r"^(?:Chapter|CHAPTER|Section|SECTION|Part|PART|Appendix|APPENDIX)\s+(?:\d{1,4}|[IVXLC]{1,6}|[A-Z])\b")
_CODE_LINE = re.compile(r":=|(?<!:)//|/\*|\*/|[{};]\s*$|^[{}]\s*$")
# A figure's own labels run into its caption on one line ("Symbol Key Figure 2. State machine…").
_LATE_CAPTION = re.compile(r"^(?:[A-Z][\w-]*\s+){1,3}(?=" + _CAPTION.pattern[1:] + ")")
# Text a font without a Unicode map turns into ("1@>8:?.&1@>.1@>"): neither prose nor a formula.
_GARBLED = re.compile(r"[@#$%&?]")
# Sections every document puts at the top level, numbered or not.
_TOP_LEVEL = re.compile(
    r"^(?:abstract|acknowledge?ments?|appendix|appendices|bibliography|conclusions?|contents|"
    r"glossary|index|introduction|preface|references|summary)\b", re.IGNORECASE
)
_MATH = re.compile(r"[=<>≤≥≈≠∝∈∉⊂⊆∑∏∫√±×÷→⇒⇔∀∃∂∇]")
_NO_HEADING_END = (".", ",", ";", ":", "!", "?")
_LEADER = re.compile(r"\.{4,}|\u2026{2,}")


@dataclass(frozen=True)
class _Layout:
    """A page's usual single-line height, gap between a paragraph's lines, and full line width."""

    height: float = 0.0
    gap: float = 0.0
    width: float = 1.0

    @property
    def break_gap(self) -> float:
        return self.gap + 0.4 * self.height


@dataclass
class _Draft:
    page: int
    lines: list[PageLine]
    layout: _Layout
    kind: str = "paragraph"
    numbering: str | None = None
    level: int = 0
    table_text: str | None = None

    @property
    def boxes(self) -> list[Box]:
        return [line.box for line in self.lines if line.box]

    @property
    def box(self) -> Box | None:
        return _union(self.boxes)

    @property
    def plain(self) -> str:
        return " ".join(line.text for line in self.lines)


def parse(extraction: Extraction, label: str) -> ParsedDocument:
    """``extraction``'s pages and blocks (reference lists left out), figures and title."""
    if not extraction.page_count and not any("page" in segment.locator for segment in extraction.segments):
        raise PipelineError("NOT_A_PAGED_DOCUMENT", f"{label} has no pages: knowledge is built from paged documents")
    drafts = [
        draft
        for segment in extraction.segments
        if "page" in segment.locator and segment.locator.get("section") != REFERENCES
        for draft in _segment_drafts(segment)
    ]
    _mark_headings(drafts)
    _set_levels(drafts)
    drafts = _merged_lists(drafts)
    blocks = [Block(ordinal, d.page, d.kind, _text(d), d.box, d.level) for ordinal, d in enumerate(drafts)]
    return ParsedDocument(_title(extraction, drafts, label), _pages(extraction), blocks, _assets(blocks))


def _pages(extraction: Extraction) -> list[Page]:
    labels: dict[int, str] = {}
    for segment in extraction.segments:
        page, printed = segment.locator.get("page"), segment.locator.get("page_label")
        if page and printed:
            labels.setdefault(int(page), str(printed))
    count = max([extraction.page_count or 0, *(int(s.locator.get("page") or 0) for s in extraction.segments)])
    return [Page(number, labels.get(number)) for number in range(1, count + 1)]


def _segment_drafts(segment: Segment) -> list[_Draft]:
    page = int(segment.locator["page"])
    if "table" in segment.locator:
        lines = [PageLine("", tuple(row[2:6])) for row in segment.locator.get(LINES) or []]  # type: ignore[misc]
        return [_Draft(page, lines, _Layout(), "table", table_text=segment.text.strip())] if segment.text.strip() else []
    lines = _lines(segment)
    layout = _layout(lines)
    drafts = []
    for group in _groups(lines, layout):
        late = _late_caption(group[0].text)
        if late:
            group[0] = PageLine(group[0].text[late:], group[0].box)
        kind, numbering = _kind(group, layout)
        if kind is not None:
            drafts.append(_Draft(page, group, layout, kind, numbering))
    return drafts


def _late_caption(text: str) -> int:
    """Where a caption starts after a figure's labels on its line (0: it does not); "In Table 2:
    we …" is a sentence, not labels."""
    late = _LATE_CAPTION.match(text)
    return late.end() if late and fold(text.split()[0]) not in STOP_WORDS | {"see"} else 0


def _lines(segment: Segment) -> list[PageLine | None]:
    """The segment's lines in order with their boxes (None: a blank line). The line table leaves
    out lines PDFium could not place, so lines are read from the text and boxes found by offset."""
    boxes = {int(row[0]): tuple(row[2:6]) for row in segment.locator.get(LINES) or []}
    lines: list[PageLine | None] = []
    offset = 0
    for part in segment.text.split("\n"):
        stripped = part.strip()
        lead = len(part) - len(part.lstrip())
        lines.append(PageLine(" ".join(stripped.split()), boxes.get(offset + lead)) if stripped else None)  # type: ignore[arg-type]
        offset += len(part) + 1
    return lines


def _layout(lines: list[PageLine | None]) -> _Layout:
    boxes = [line.box for line in lines if line and line.box]
    if not boxes:
        return _Layout()
    height = statistics.median(box[3] - box[1] for box in boxes)
    gaps = [b[1] - a[3] for a, b in zip(boxes, boxes[1:]) if 0 <= b[1] - a[3] < 1.5 * height]
    widths = [box[2] - box[0] for box, line in zip(boxes, [l for l in lines if l and l.box]) if len(line.text) >= 40]
    return _Layout(height, statistics.median(gaps) if gaps else 0.3 * height, statistics.median(widths) if widths else 1.0)


def _groups(lines: list[PageLine | None], layout: _Layout) -> list[list[PageLine]]:
    groups: list[list[PageLine]] = []
    current: list[PageLine] = []
    for line in lines:
        if line is None or (current and _starts_block(current, line, layout)):
            if current:
                groups.append(current)
            current = []
        if line is not None:
            current.append(line)
    return groups + [current] if current else groups


def _starts_block(current: list[PageLine], line: PageLine, layout: _Layout) -> bool:
    if _BULLET.match(line.text) or _CAPTION.match(line.text) or _late_caption(line.text):
        return True
    if _numbering(line, layout) is not None or _numbering(current[-1], layout) is not None:
        return True
    prev, box = _last_row(current, layout), line.box
    if prev is None or box is None:
        return False
    if abs(box[1] - prev[1]) < 0.5 * layout.height and box[0] >= prev[2] - 0.01:
        return False  # the same printed line, drawn in pieces
    moved_up = box[3] <= prev[1] + 0.1 * layout.height
    apart = box[0] > prev[2] or box[2] < prev[0]
    indented = box[0] - prev[0] > 0.01 and current[-1].text.endswith((".", "!", "?", ":", "\u201d", '"'))
    return moved_up or apart or box[1] - prev[3] > layout.break_gap or indented


def _last_row(lines: list[PageLine], layout: _Layout) -> Box | None:
    """The box around the last printed line of ``lines``: all its pieces on the same row."""
    boxes = [line.box for line in lines if line.box]
    return _union([box for box in boxes if abs(box[1] - boxes[-1][1]) < 0.5 * layout.height]) if boxes else None


def _union(boxes: list[Box]) -> Box | None:
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _numbering(line: PageLine, layout: _Layout) -> str | None:
    """The number of a numbered heading line ("2.3", "IV", "A", "Chapter 4"), else None. A line of
    a paragraph may start with a number too; a heading is short, narrower than the column, and
    not unfinished."""
    text = line.text
    if len(text) > 90 or len(text.split()) > 12 or _unfinished(text) or _LEADER.search(text):
        return None
    if _CODE_LINE.search(text) or (line.box and layout.height and line.box[2] - line.box[0] > 0.95 * layout.width):
        return None
    named = _NAMED.match(text)
    if named:
        return named.group(0)
    match = NUMBERED.match(text)
    if match is None or not re.search(r"[^\W\d_]{3}", match.group("title")):
        return None
    return match.group("arabic") or match.group("roman") or match.group("letter") + (match.group("sub") or "")


def _unfinished(text: str) -> bool:
    """Whether ``text`` reads as part of a sentence, not a title: it ends in punctuation or in a
    function word ("send your request to your")."""
    last = text.split()[-1] if text.split() else ""
    return text.endswith(_NO_HEADING_END) or fold(last) in STOP_WORDS


def _kind(lines: list[PageLine], layout: _Layout) -> tuple[str | None, str | None]:
    """A group's kind and heading number; None for text that is not knowledge (a figure's
    labels, a margin stamp, stray symbols)."""
    text = " ".join(line.text for line in lines)
    boxes = [line.box for line in lines if line.box]
    formula = _is_formula(text)
    if not re.search(r"[^\W\d_]{2}", text) and not formula or len(_GARBLED.findall(text)) > 0.1 * len(text):
        return None, None
    if boxes and all(box[3] - box[1] > 2 * (box[2] - box[0]) for box in boxes):
        return None, None
    small = boxes and statistics.median(box[3] - box[1] for box in boxes) < 0.7 * layout.height
    if small and max(len(line.text) for line in lines) <= 30 and len(text) <= 80:
        return None, None
    if _CAPTION.match(text):
        return "caption", None
    numbering = _numbering(lines[0], layout) if _rows(lines, layout) == 1 else None
    if numbering is not None:
        return "heading", numbering
    if _BULLET.match(text):
        return "list", None
    code = sum(bool(_CODE_LINE.search(line.text)) for line in lines)
    if (len(lines) >= 2 and code >= 0.5 * len(lines)) or ":=" in text and len(lines) == 1:
        return "code", None
    return ("formula" if formula else "paragraph"), None


def _is_formula(text: str) -> bool:
    """Mostly symbols and operators, few words: a displayed equation."""
    if len(text) > 250 or not _MATH.search(text):
        return False
    prose = [word for word in re.findall(r"[^\W\d_]+", text) if len(word) >= 3]
    symbols = sum(not char.isalnum() and not char.isspace() for char in text) / len(text)
    return len(prose) <= 3 or (len(prose) <= 8 and symbols >= 0.08)


def _rows(lines: list[PageLine], layout: _Layout) -> int:
    """How many printed lines ``lines`` make (a line may be drawn in pieces)."""
    rows, top = 0, None
    for line in lines:
        if line.box is None or top is None or abs(line.box[1] - top) >= 0.5 * layout.height:
            rows += 1
        top = line.box[1] if line.box else None
    return rows


def _mark_headings(drafts: list[_Draft]) -> None:
    """Unnumbered headings: a short paragraph of one or two printed lines without final punctuation, in
    body-size type, right above a paragraph, a list or another heading of its column."""
    for index in range(len(drafts) - 1, -1, -1):
        draft = drafts[index]
        after = drafts[index + 1] if index + 1 < len(drafts) and drafts[index + 1].page == draft.page else None
        if draft.kind == "paragraph" and after is not None and after.kind in ("paragraph", "list", "heading"):
            if _stands_alone(draft, after):
                draft.kind = "heading"


def _stands_alone(draft: _Draft, after: _Draft) -> bool:
    text, layout = draft.plain, draft.layout
    if len(text) > 100 or len(text.split()) > 14 or _unfinished(text) or _rows(draft.lines, layout) > 2:
        return False
    if not (text[0].isupper() or text[0].isdigit()) or not re.search(r"[^\W\d_]{3}", text):
        return False
    box, below = draft.box, after.box
    if box is None or below is None:
        return True
    if box[3] - box[1] < 0.7 * layout.height or below[0] > box[2] or below[2] < box[0]:
        return False
    return box[3] - 0.2 * layout.height <= below[1] <= box[3] + 4 * layout.height


def _set_levels(drafts: list[_Draft]) -> None:
    """Numbered headings take their depth ("2.3" → 2; IEEE's "II." → 1 and "B." → 2); an
    unnumbered one under numbered ones is taken as one level below the last (a run-in heading),
    and as 1 where nothing numbered came before it or where it names a top-level section
    ("Acknowledgments")."""
    last, roman_seen = 0, False
    for draft in drafts:
        if draft.kind != "heading":
            continue
        number = draft.numbering
        if number is None:
            draft.level = last + 1 if last and not _TOP_LEVEL.match(draft.plain) else 1
            continue
        if re.fullmatch(r"[IVX]+", number) and (number == "I" or roman_seen):
            draft.level, roman_seen = 1, True
        elif re.fullmatch(r"[A-Z](?:\.\d+)*", number):
            draft.level = number.count(".") + (2 if roman_seen and "." not in number else 1)
        elif number[0].isdigit():
            draft.level = number.count(".") + 1
        else:
            draft.level = 1
        last = draft.level


def _merged_lists(drafts: list[_Draft]) -> list[_Draft]:
    """Consecutive items of one list on a page as one list block, so that no unit splits a list."""
    merged: list[_Draft] = []
    for draft in drafts:
        prev = merged[-1] if merged else None
        if prev is not None and prev.kind == draft.kind == "list" and prev.page == draft.page and _near(prev, draft):
            prev.lines = prev.lines + draft.lines
            continue
        merged.append(draft)
    return merged


def _near(prev: _Draft, draft: _Draft) -> bool:
    above, below = prev.box, draft.box
    if above is None or below is None:
        return True
    return below[0] <= above[2] and below[2] >= above[0] and 0 <= below[1] - above[3] <= 3 * prev.layout.height


def _text(draft: _Draft) -> str:
    if draft.table_text is not None:
        return draft.table_text
    if draft.kind in ("code", "formula"):
        return "\n".join(line.text for line in draft.lines)
    text = ""
    for line in draft.lines:
        if not text:
            text = line.text
        elif draft.kind == "list" and _BULLET.match(line.text):
            text += "\n" + line.text
        elif text.endswith("-") and len(text) > 1 and text[-2].isalpha() and text[-2].islower() and line.text[:1].islower():
            text = text[:-1] + line.text  # end-of-line hyphenation
        else:
            text += " " + line.text
    return text


def _assets(blocks: list[Block]) -> list[Asset]:
    """One figure or table per caption: "fig3"/"tab1" by its number, else by page and position."""
    assets: list[Asset] = []
    on_page: dict[tuple[int, str], int] = {}
    for block in blocks:
        match = _CAPTION.match(block.text) if block.kind == "caption" else None
        if match is None:
            continue
        kind = "table" if match.group("word").lower().startswith("tab") else "figure"
        prefix = "tab" if kind == "table" else "fig"
        on_page[(block.page, prefix)] = on_page.get((block.page, prefix), 0) + 1
        key = f"{prefix}{match.group('number')}" if match.group("number").isdigit() else ""
        if not key or any(asset.key == key for asset in assets):
            key = f"{prefix}-p{block.page}-{on_page[(block.page, prefix)]}"
        assets.append(Asset(key, block.page, kind, block.text, block.box))
    return assets


def _title(extraction: Extraction, drafts: list[_Draft], label: str) -> str:
    """The document's own title, else the line set in the largest type among page 1's short
    unpunctuated blocks (a paper's title, above its authors), else ``label``."""
    if extraction.title and extraction.title.strip():
        return " ".join(extraction.title.split())
    candidates = [
        draft for draft in drafts
        if draft.page == 1 and draft.kind in ("heading", "paragraph") and len(draft.plain) <= 200
        and not draft.plain.endswith(_NO_HEADING_END) and re.search(r"[^\W\d_]{3}", draft.plain)
    ]
    if not candidates:
        return label
    best = max(candidates, key=lambda d: statistics.median([box[3] - box[1] for box in d.boxes] or [0.0]))
    return _text(best)
