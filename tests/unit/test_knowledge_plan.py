"""Planning semantic units: sections under their headings, short ones merged, long ones cut between
blocks but never before a formula or away from a caption; on real corpus PDFs and on pages laid
out here line by line."""
from __future__ import annotations

from functools import lru_cache

import pytest

from pipeline.extractors import extract
from pipeline.knowledge.headings import heading_title
from pipeline.knowledge.parse import parse
from pipeline.knowledge.plan import UnitBounds, plan_units, window_chars
from pipeline.knowledge.types import Block, ParsedDocument, UnitPlan
from pipeline.line_boxes import LINES
from pipeline.types import Extraction, Segment
from support.services import CORPUS

PDFS = ("tracemonkey.pdf", "dmca.pdf", "naacl06-shinyama.pdf", "thoma-creativity-in-ml.pdf", "federal-register-2020-17221.pdf")
SMALL = UnitBounds(min_chars=50, max_chars=300)
# A paragraph of about 200 characters, laid out as three lines.
PARAGRAPH = "word " * 36 + "ends here."


@lru_cache(maxsize=None)
def document(name: str) -> ParsedDocument:
    return parse(extract((CORPUS / "pdf" / name).read_bytes(), filename=name), name)


def laid_out(*parts: str) -> ParsedDocument:
    """One page: each part a paragraph of three full-width lines (or, when short, one centred
    line), parts a clear gap apart, lines of a part at the usual spacing."""
    lines: list[str] = []
    table: list[list[float]] = []
    offset, top = 0, 0.1
    for part in parts:
        words = part.split()
        rows = [" ".join(words[len(words) * i // 3: len(words) * (i + 1) // 3]) for i in range(3)] if len(part) > 80 else [part]
        for row in rows:
            left, right = (0.1, 0.9) if len(rows) > 1 else (0.4, 0.6)
            table.append([offset, offset + len(row), left, top, right, top + 0.012])
            lines.append(row)
            offset += len(row) + 1
            top += 0.015
        top += 0.02
    text = "\n".join(lines)
    return parse(Extraction("application/pdf", [Segment(text, {"page": 1, LINES: table})], page_count=1), "laid-out.pdf")


def unit_of(plans: list[UnitPlan], ordinal: int) -> UnitPlan:
    return next(plan for plan in plans if ordinal in plan.block_ordinals)


@pytest.mark.parametrize("name", PDFS)
def test_units_tile_the_document_in_reading_order(name: str) -> None:
    parsed = document(name)
    plans = plan_units(parsed)
    assert [plan.key for plan in plans] == [f"u{index:03d}" for index in range(1, len(plans) + 1)]
    assert [ordinal for plan in plans for ordinal in plan.block_ordinals] == [block.ordinal for block in parsed.blocks]
    assert all(plan.title.strip() for plan in plans)


@pytest.mark.parametrize("name", PDFS)
def test_every_unit_is_within_bounds_unless_it_is_a_single_block(name: str) -> None:
    parsed, bounds = document(name), UnitBounds()
    blocks = {block.ordinal: block for block in parsed.blocks}
    for plan in plan_units(parsed, bounds):
        body = [ordinal for ordinal in plan.block_ordinals if blocks[ordinal].kind != "heading"]
        assert body, plan.key
        assert window_chars(parsed, plan) <= bounds.max_chars or len(body) == 1, plan.key


def test_sections_follow_the_outline_of_numbered_headings() -> None:
    plans = plan_units(document("tracemonkey.pdf"))
    titles = [plan.title for plan in plans]
    introduction = plans[titles.index("Introduction")]
    assert introduction.path == ()
    assert document("tracemonkey.pdf").blocks[introduction.block_ordinals[0]].text == "1. Introduction"
    blacklisting = plans[titles.index("Blacklisting with Nesting")]
    assert blacklisting.path == ("Nested Trace Tree Formation",)
    naacl = plan_units(document("naacl06-shinyama.pdf"))
    results = next(plan for plan in naacl if plan.title == "Results")
    assert results.path == ("Experiment and Evaluation",)


def test_a_short_section_merges_with_the_next_one_under_the_same_parent() -> None:
    parsed = document("dmca.pdf")
    plans = plan_units(parsed)
    merged = next(plan for plan in plans if plan.title == "Technical Amendments")
    texts = [parsed.blocks[ordinal].text for ordinal in merged.block_ordinals]
    assert texts[:2] == ["Technical Amendments", "National Eligibility"], "a heading with nothing under it"
    assert window_chars(parsed, merged) >= UnitBounds().min_chars


def test_a_long_section_is_cut_between_blocks_into_similar_parts() -> None:
    parsed = laid_out("1 Methods", *(f"Paragraph {n} " + PARAGRAPH for n in range(6)))
    plans = plan_units(parsed, SMALL)
    assert len(plans) >= 4
    assert all(window_chars(parsed, plan) <= SMALL.max_chars for plan in plans)
    assert plans[0].block_ordinals[0] == 0 and parsed.blocks[0].kind == "heading"
    assert {plan.title for plan in plans} == {"Methods"}


def test_a_formula_stays_with_the_paragraph_before_it_at_a_split_point() -> None:
    parsed = laid_out("1 Energy", "First " + PARAGRAPH, "Energy is defined as " + PARAGRAPH, "E = m c2", "Then " + PARAGRAPH)
    kinds = [block.kind for block in parsed.blocks]
    assert kinds == ["heading", "paragraph", "paragraph", "formula", "paragraph"]
    plans = plan_units(parsed, SMALL)
    assert len(plans) > 1
    assert unit_of(plans, 3) == unit_of(plans, 2), "the formula is with the paragraph defining it"
    assert all(parsed.blocks[plan.block_ordinals[0]].kind != "formula" for plan in plans)


def test_a_caption_stays_with_its_paragraph_and_names_its_figure() -> None:
    parsed = laid_out("1 Results", "First " + PARAGRAPH, "As the plot shows " + PARAGRAPH, "Figure 1: Energy over time.", "Then " + PARAGRAPH)
    assert [block.kind for block in parsed.blocks][3] == "caption"
    assert [asset.key for asset in parsed.assets] == ["fig1"]
    plans = plan_units(parsed, SMALL)
    holder = unit_of(plans, 3)
    assert 2 in holder.block_ordinals
    assert holder.asset_keys == ("fig1",)
    assert all(plan.asset_keys == () for plan in plans if plan != holder)


def test_a_block_longer_than_the_ceiling_is_a_unit_of_its_own() -> None:
    parsed = laid_out("Opening " + PARAGRAPH, "Long " + PARAGRAPH * 3, "Closing " + PARAGRAPH)
    plans = plan_units(parsed, UnitBounds(min_chars=50, max_chars=300))
    assert unit_of(plans, 1).block_ordinals == (1,)


def test_a_document_without_headings_is_cut_by_size() -> None:
    parsed = laid_out(*(f"Part {n} " + PARAGRAPH for n in range(5)))
    plans = plan_units(parsed, SMALL)
    assert len(plans) >= 3
    assert all(plan.path == () for plan in plans)
    assert plans[0].title == "Part 0 word word word word word word…"


def test_figures_go_to_the_unit_that_holds_their_caption() -> None:
    parsed = document("tracemonkey.pdf")
    captions = {(block.page, block.text): block.ordinal for block in parsed.blocks if block.kind == "caption"}
    for plan in plan_units(parsed):
        for asset in parsed.assets:
            assert (asset.key in plan.asset_keys) == (captions[(asset.page, asset.caption)] in plan.block_ordinals)


def test_planning_is_deterministic() -> None:
    parsed = document("naacl06-shinyama.pdf")
    first = plan_units(parsed)
    assert plan_units(ParsedDocument.from_dict(parsed.to_dict())) == first
    assert [UnitPlan.from_dict(plan.to_dict()) for plan in first] == first


def test_a_document_of_headings_only_still_makes_a_unit() -> None:
    parsed = ParsedDocument("t", [], [Block(0, 1, "heading", "1 Alone", level=1), Block(1, 1, "heading", "2 Apart", level=1)])
    assert [plan.block_ordinals for plan in plan_units(parsed)] == [(0, 1)]


@pytest.mark.parametrize("heading, title", [
    ("A.1 Overview", "Overview"), ("2.3 Results:", "Results"), ("IV. Discussion", "Discussion"), ("B. Methods", "Methods"),
    ("1. Introduction", "Introduction"), ("A Note on Things", "A Note on Things"), ("Chapter 4 Results", "Chapter 4 Results"),
    ("2023 Annual Report", "2023 Annual Report"),
])
def test_a_unit_is_titled_by_its_heading_without_the_number(heading: str, title: str) -> None:
    """Review note: an appendix heading "A.1 Overview" kept its "A.1" (the planner read numbers by
    a second grammar that wanted a dot after the letter's number)."""
    assert heading_title(heading) == title
