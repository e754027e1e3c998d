"""Parsing a paged extraction for the knowledge layer, on real corpus PDFs read in place: pages with
their printed labels, blocks in reading order with their kinds, figures found by their captions,
and nothing of a reference list."""
from __future__ import annotations

from functools import lru_cache

import pytest

from pipeline.extractors import extract
from pipeline.extractors.reference_lists import REFERENCES
from pipeline.knowledge.checks import contains
from pipeline.knowledge.parse import parse
from pipeline.knowledge.types import ParsedDocument
from pipeline.types import Extraction, PipelineError, Segment
from support.services import CORPUS


@lru_cache(maxsize=None)
def extraction(name: str) -> Extraction:
    return extract((CORPUS / "pdf" / name).read_bytes(), filename=name)


@lru_cache(maxsize=None)
def document(name: str) -> ParsedDocument:
    return parse(extraction(name), name)


def headings(name: str) -> list[tuple[int, int, str]]:
    return [(block.page, block.level, block.text) for block in document(name).blocks if block.kind == "heading"]


def test_tracemonkey_numbered_sections_are_headings_with_their_depth() -> None:
    found = headings("tracemonkey.pdf")
    assert (1, 1, "1. Introduction") in found
    assert (4, 1, "3. Trace Trees") in found
    assert (4, 2, "3.1 Traces") in found
    assert (5, 2, "3.2 Trace Trees") in found
    assert (1, 1, "Abstract") in found, "a short line standing alone above a paragraph"


def test_ieee_roman_and_letter_headings_nest() -> None:
    found = headings("thoma-creativity-in-ml.pdf")
    assert (1, 1, "I. INTRODUCTION") in found
    assert (2, 1, "III. IMAGE DATA") in found
    assert (2, 2, "A. Google DeepDream") in found


def test_unnumbered_headings_of_a_report_are_found() -> None:
    texts = [text for _, _, text in headings("dmca.pdf")]
    assert "INTRODUCTION" in texts
    assert "TITLE I: WIPO TREATY IMPLEMENTATION" in texts
    assert "Registration as a Prerequisite to Suit" in texts
    assert not any(text.startswith("Section 104 of") for text in texts), "a sentence starting with a number"


def test_every_page_is_listed_with_the_label_the_pdf_prints() -> None:
    register = document("federal-register-2020-17221.pdf")
    assert [(page.number, page.label) for page in register.pages[:3]] == [(1, "47698"), (2, "47699"), (3, "47700")]
    assert len(register.pages) == extraction("federal-register-2020-17221.pdf").page_count
    tracemonkey = document("tracemonkey.pdf")
    assert [page.number for page in tracemonkey.pages] == list(range(1, 15))
    assert all(page.label is None for page in tracemonkey.pages)


def test_blocks_are_numbered_in_reading_order_and_lie_on_their_pages() -> None:
    for name in ("tracemonkey.pdf", "naacl06-shinyama.pdf"):
        parsed, source = document(name), extraction(name)
        assert [block.ordinal for block in parsed.blocks] == list(range(len(parsed.blocks)))
        assert [block.page for block in parsed.blocks] == sorted(block.page for block in parsed.blocks)
        for block in parsed.blocks:
            page_text = "\n".join(s.text for s in source.segments if s.locator["page"] == block.page)
            assert contains(page_text, block.text), (name, block.ordinal)
            assert block.box is not None and 0 <= block.box[0] <= block.box[2] <= 1 and 0 <= block.box[1] <= block.box[3] <= 1


def test_code_listings_and_captions_are_told_from_paragraphs() -> None:
    blocks = document("tracemonkey.pdf").blocks
    listing = next(block for block in blocks if block.text.startswith("v0 := ld state[748]"))
    assert (listing.kind, listing.page) == ("code", 3)
    assert "\n" in listing.text, "a listing keeps its lines"
    caption = next(block for block in blocks if block.text.startswith("Figure 3. LIR snippet"))
    assert caption.kind == "caption"
    contributions = next(block for block in blocks if block.text.startswith("• We explain an algorithm"))
    assert contributions.kind == "list" and contributions.text.count("•") == 3, "one list block for the bullets"


def test_figures_and_tables_are_assets_keyed_by_their_number() -> None:
    assets = {asset.key: asset for asset in document("tracemonkey.pdf").assets}
    assert {"fig1", "fig2", "fig3", "fig4", "fig10", "fig13"} <= set(assets)
    assert (assets["fig3"].page, assets["fig3"].kind) == (3, "figure")
    assert assets["fig2"].caption.startswith("Figure 2. State machine"), "the figure's labels run into its caption"
    naacl = {asset.key: asset for asset in document("naacl06-shinyama.pdf").assets}
    assert (naacl["tab2"].page, naacl["tab2"].kind, naacl["tab2"].caption) == (6, "table", "Table 2: Articles and obtained metaclusters.")


def test_a_ruled_table_is_a_table_block() -> None:
    table = next(block for block in document("naacl06-shinyama.pdf").blocks if block.kind == "table")
    assert table.page == 6 and "Basic clusters | 5,543" in table.text


def test_reference_lists_produce_no_blocks() -> None:
    source = extraction("naacl06-shinyama.pdf")
    references = [segment for segment in source.segments if segment.locator.get("section") == REFERENCES]
    assert references
    texts = [block.text for block in document("naacl06-shinyama.pdf").blocks]
    for segment in references:
        for line in segment.text.split("\n"):
            if len(line) > 30:
                assert not any(contains(text, line) for text in texts), line
    only_references = Extraction("application/pdf", [Segment("Smith, J. 2001. A paper.", {"page": 1, "section": REFERENCES})], page_count=1)
    assert parse(only_references, "refs.pdf").blocks == []


def test_end_of_line_hyphenation_is_undone_in_the_block_text() -> None:
    source = Extraction("application/pdf", [Segment("The parser was imple-\nmented in Python-\nScript and C.", {"page": 1})], page_count=1)
    [block] = parse(source, "x.pdf").blocks
    assert block.text == "The parser was implemented in Python- Script and C."
    assert block.box is None


def test_text_without_line_boxes_is_split_at_blank_lines() -> None:
    source = Extraction("application/pdf", [Segment("First paragraph here.\n\nSecond paragraph here.\n2 Methods\nWe measured.", {"page": 2, "page_label": "ii"})], page_count=2)
    parsed = parse(source, "scan.pdf")
    assert [(block.kind, block.text) for block in parsed.blocks] == [
        ("paragraph", "First paragraph here."),
        ("paragraph", "Second paragraph here."),
        ("heading", "2 Methods"),
        ("paragraph", "We measured."),
    ]
    assert [(page.number, page.label) for page in parsed.pages] == [(1, None), (2, "ii")]


def test_the_title_is_the_documents_own_else_its_first_page_headline_else_the_label() -> None:
    assert document("dmca.pdf").title == "The Digital Millennium Copyright Act of 1998"
    assert document("tracemonkey.pdf").title == "Trace-based Just-in-Time Type Specialization for Dynamic Languages"
    assert parse(Extraction("application/pdf", [], page_count=1), "blank.pdf").title == "blank.pdf"


@pytest.mark.parametrize(
    "source",
    [
        extract(b"A plain text file.\n\nWith two paragraphs.", filename="notes.txt"),
        Extraction("text/html", [Segment("A web page.", {"url": "https://example.org/", "fragment": "intro"})]),
        Extraction("audio/mpeg", [Segment("Spoken words.", {"start": 0.0, "end": 2.5})], duration_seconds=2.5),
    ],
    ids=["plain-text", "web-page", "media"],
)
def test_a_document_without_pages_is_refused(source: Extraction) -> None:
    with pytest.raises(PipelineError) as raised:
        parse(source, "source")
    assert raised.value.code == "NOT_A_PAGED_DOCUMENT"


def test_parsing_is_deterministic_and_survives_its_json_form() -> None:
    again = parse(extraction("naacl06-shinyama.pdf"), "naacl06-shinyama.pdf")
    assert again == document("naacl06-shinyama.pdf")
    assert ParsedDocument.from_dict(again.to_dict()) == again
