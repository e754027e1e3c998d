"""Plan: a parsed document's semantic units, the windows its notes are written from.

A unit is a section of the document's outline, not a fixed length: everything under one heading
down to the next heading. A section shorter than ``min_chars`` (a heading over two sentences)
joins the sections after it under the same parent, or its own subsections, since alone it would
make a note that says nothing; one longer than ``max_chars`` is cut between blocks, never inside
one. Some cuts would tear a thought apart and are never made: before a formula (it belongs to the
paragraph that introduces its symbols), next to a caption (it explains the figure its neighbours
discuss), inside a list (a list is one block). A document without headings is cut by size alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipeline.answering.sentences import sentence_spans
from pipeline.knowledge.headings import heading_title
from pipeline.knowledge.types import Block, ParsedDocument, UnitPlan

_PHRASE_WORDS = 8


@dataclass(frozen=True)
class UnitBounds:
    """How long a unit's text may be, in characters of its blocks' text."""

    min_chars: int = 600
    max_chars: int = 4000


@dataclass
class _Section:
    title: str
    path: tuple[str, ...]
    blocks: list[Block]

    @property
    def chars(self) -> int:
        return _chars(self.blocks)


def plan_units(document: ParsedDocument, bounds: UnitBounds = UnitBounds()) -> list[UnitPlan]:
    """The document's units in reading order, keyed "u001", "u002", …; their windows tile the
    document's blocks."""
    windows: list[_Section] = []
    for section in _merged(_sections(document.blocks), bounds):
        windows.extend(_split(section, bounds))
    windows = _absorb_empty(windows)
    captions = {(asset.page, asset.caption): asset.key for asset in document.assets}
    return [
        UnitPlan(
            f"u{index:03d}",
            window.title or short_phrase(_first_text(window.blocks)),
            window.path,
            tuple(block.ordinal for block in window.blocks),
            tuple(captions[(b.page, b.text)] for b in window.blocks if b.kind == "caption" and (b.page, b.text) in captions),
        )
        for index, window in enumerate(windows, start=1)
    ]


def window_chars(document: ParsedDocument, plan: UnitPlan) -> int:
    """How long a unit's text is, headings left out (what ``UnitBounds`` bounds)."""
    blocks = {block.ordinal: block for block in document.blocks}
    return _chars([blocks[ordinal] for ordinal in plan.block_ordinals])


def short_phrase(text: str) -> str:
    """The first words of ``text``'s first sentence, for a unit without a heading."""
    spans = sentence_spans(text)
    sentence = text[spans[0][0]:spans[0][1]] if spans else text
    words = sentence.split()
    phrase = " ".join(words[:_PHRASE_WORDS]).rstrip(" .:;,")
    return phrase + ("…" if len(words) > _PHRASE_WORDS else "")


def _sections(blocks: list[Block]) -> list[_Section]:
    """Everything under each heading, with the headings above it as its path."""
    sections = [_Section("", (), [])]
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.kind == "heading":
            level = max(block.level, 1)
            while stack and stack[-1][0] >= level:
                stack.pop()
            title = heading_title(block.text)
            sections.append(_Section(title, tuple(name for _, name in stack), [block]))
            stack.append((level, title))
        else:
            sections[-1].blocks.append(block)
    return [section for section in sections if section.blocks]


def _merged(sections: list[_Section], bounds: UnitBounds) -> list[_Section]:
    """A short section joined by the next one while that is a sibling or one of its own
    subsections; the first one's heading names them (``_split`` cuts them again if too long)."""
    merged: list[_Section] = []
    for section in sections:
        last = merged[-1] if merged else None
        if last is not None and last.chars < bounds.min_chars and _under(section, last):
            last.blocks.extend(section.blocks)
            last.title = last.title or section.title
            continue
        merged.append(_Section(section.title, section.path, list(section.blocks)))
    return merged


def _under(section: _Section, first: _Section) -> bool:
    """Whether ``section`` has the same parent as ``first`` or lies inside it."""
    own = first.path + ((first.title,) if first.title else ())
    return section.path == first.path or section.path[: len(own)] == own


def _split(section: _Section, bounds: UnitBounds) -> list[_Section]:
    """``section`` cut between blocks into parts of about equal length under ``max_chars``."""
    if section.chars <= bounds.max_chars:
        return [section]
    atoms = _atoms(section.blocks, bounds.max_chars)
    target = section.chars / math.ceil(section.chars / bounds.max_chars)
    parts: list[list[Block]] = [[]]
    rest = section.chars
    for atom in atoms:
        size, grown = _chars(parts[-1]), _chars(atom)
        # Cut where the part comes closest to the target, unless what is left would be too short.
        if size and (size + grown > bounds.max_chars or size + grown / 2 > target and rest >= bounds.min_chars):
            parts.append([])
        parts[-1].extend(atom)
        rest -= grown
    return [_Section(section.title, section.path, part) for part in parts]


def _atoms(blocks: list[Block], max_chars: int) -> list[list[Block]]:
    """``blocks`` in runs that no cut may separate: a formula with the block before it, a
    caption with both its neighbours, a heading with what follows it. A caption's neighbour
    that would take the run past ``max_chars`` is let go: the figure's text is then the side
    that stays whole."""
    atoms: list[list[Block]] = []
    for index, block in enumerate(blocks):
        prev = blocks[index - 1] if index else None
        size = _chars(atoms[-1]) if atoms else 0
        loose = block.kind == "caption" or prev is not None and prev.kind == "caption"
        glued = prev is not None and (block.kind in ("formula", "caption") or prev.kind in ("caption", "heading"))
        if glued and atoms and not (loose and size + len(block.text) > max_chars):
            atoms[-1].append(block)
        else:
            atoms.append([block])
    return atoms


def _absorb_empty(windows: list[_Section]) -> list[_Section]:
    """A window of headings only (a heading whose section is not under it, or a last heading with
    nothing under it) joins the window after it, or the one before at the end, so that every
    unit has something to write from."""
    kept: list[_Section] = []
    pending: list[Block] = []
    for window in windows:
        if all(block.kind == "heading" for block in window.blocks):
            pending.extend(window.blocks)
            continue
        window.blocks[:0] = pending
        pending = []
        kept.append(window)
    if pending and kept:
        kept[-1].blocks.extend(pending)
    elif pending:
        kept.append(_Section(heading_title(pending[0].text), (), pending))
    return kept


def _chars(blocks: list[Block]) -> int:
    return sum(len(block.text) for block in blocks if block.kind != "heading")


def _first_text(blocks: list[Block]) -> str:
    return next((block.text for block in blocks if block.kind in ("paragraph", "list")), blocks[0].text if blocks else "")
