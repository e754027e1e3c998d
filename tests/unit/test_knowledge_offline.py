"""The offline note writer, the code checks and the Markdown export, on real corpus PDFs read in
place: every note of every unit passes the checks, every claim is the document's own sentence on
its page, and the checks catch a draft that strays from its window."""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import pytest

from pipeline.extractors import extract
from pipeline.knowledge.checks import check_draft, contains
from pipeline.knowledge.markdown import source_note_markdown
from pipeline.knowledge.offline import OfflineNoteWriter
from pipeline.knowledge.parse import parse
from pipeline.knowledge.plan import plan_units
from pipeline.knowledge.types import Block, Claim, Evidence, NoteBlock, NoteDraft, Page, ParsedDocument, UnitPlan
from pipeline.types import Extraction
from support.services import CORPUS

PDFS = ("tracemonkey.pdf", "dmca.pdf", "naacl06-shinyama.pdf", "thoma-creativity-in-ml.pdf", "federal-register-2020-17221.pdf")
WRITER = OfflineNoteWriter()


@lru_cache(maxsize=None)
def extraction(name: str) -> Extraction:
    return extract((CORPUS / "pdf" / name).read_bytes(), filename=name)


@lru_cache(maxsize=None)
def written(name: str) -> tuple[ParsedDocument, list[UnitPlan], list[NoteDraft]]:
    document = parse(extraction(name), name)
    plans = plan_units(document)
    return document, plans, [WRITER.write(document, plan) for plan in plans]


@pytest.mark.parametrize("name", PDFS)
def test_every_offline_draft_of_the_corpus_passes_the_checks(name: str) -> None:
    document, plans, drafts = written(name)
    results = [check_draft(document, plan, draft) for plan, draft in zip(plans, drafts)]
    assert [result.problems for result in results if not result.ok] == []
    assert all(result.judged_by is None for result in results)
    assert sum(len(draft.claims) for draft in drafts) >= 2 * len(drafts), "about five key sentences a unit"


@pytest.mark.parametrize("name", PDFS)
def test_every_evidence_snippet_is_found_on_its_page(name: str) -> None:
    document, _, drafts = written(name)
    pages = {page.number: page.label for page in document.pages}
    for draft in drafts:
        for evidence in draft.evidence:
            page_text = "\n".join(s.text for s in extraction(name).segments if s.locator["page"] == evidence.page)
            assert contains(page_text, evidence.snippet), (draft.plan_key, evidence.claim_key)
            assert evidence.page_label == pages[evidence.page]


def test_evidence_carries_the_printed_page_label() -> None:
    _, _, drafts = written("federal-register-2020-17221.pdf")
    first = drafts[0].evidence[0]
    assert (first.page, first.page_label) == (1, "47698")


def test_a_unit_whose_heading_follows_a_footnote_is_titled_by_the_heading() -> None:
    _, plans, drafts = written("dmca.pdf")
    assert plans[0].title == "INTRODUCTION", "the lines above the first heading (a footnote, the title) merge into it"
    assert drafts[0].title == "INTRODUCTION", "not the footnote's first words ('Pub. L. No. 105-304')"


def test_a_note_is_its_units_own_blocks_titled_by_its_heading() -> None:
    document, plans, drafts = written("tracemonkey.pdf")
    index = [plan.title for plan in plans].index("Introduction")
    plan, draft = plans[index], drafts[index]
    assert draft.title == "Introduction"
    window = [document.blocks[ordinal] for ordinal in plan.block_ordinals if document.blocks[ordinal].kind != "heading"]
    assert [(block.key, block.kind, block.text) for block in draft.blocks] == [
        (f"b{number}", block.kind, block.text) for number, block in enumerate(window, start=1)
    ]
    assert any(draft.summary == claim.text for claim in draft.claims), "the summary is the most central claim"
    assert any(draft.summary in block.text for block in window)


@pytest.mark.parametrize("name", PDFS)
def test_claims_are_whole_sentences_of_prose_never_code_or_captions(name: str) -> None:
    _, _, drafts = written(name)
    for draft in drafts:
        kinds = {block.key: block for block in draft.blocks}
        assert len(draft.claims) <= 5
        for claim in draft.claims:
            block = kinds[claim.block_key]
            assert block.kind in ("paragraph", "list", "table") and claim.text in block.text
            assert not claim.text[0].islower(), claim.text
        assert [claim.key for claim in draft.claims] == [f"c{n}" for n in range(1, len(draft.claims) + 1)]


def test_offline_drafts_are_deterministic() -> None:
    document, plans, drafts = written("naacl06-shinyama.pdf")
    again = [OfflineNoteWriter().write(ParsedDocument.from_dict(document.to_dict()), plan) for plan in plans]
    assert [draft.to_dict() for draft in again] == [draft.to_dict() for draft in drafts]
    assert [NoteDraft.from_dict(draft.to_dict()) for draft in drafts] == drafts


def test_the_offline_writer_has_no_judge() -> None:
    document, plans, drafts = written("dmca.pdf")
    assert WRITER.name == "offline"
    assert WRITER.judge(document, plans[0], drafts[0]) == ()
    assert drafts[0].images == list(plans[0].asset_keys)


def _tampered(draft: NoteDraft, document: ParsedDocument, plan: UnitPlan, how: str) -> NoteDraft:
    first = draft.evidence[0]
    outside = next(block for block in document.blocks if block.ordinal not in plan.block_ordinals)
    changed = {
        "snippet": replace(first, snippet=first.snippet.replace(" ", " not ", 1)),
        "page": replace(first, page=first.page + 1),
        "window": replace(first, block_ordinal=outside.ordinal, page=outside.page, snippet=outside.text[:40]),
    }
    if how == "block":
        return replace(draft, claims=[replace(draft.claims[0], block_key="b99"), *draft.claims[1:]])
    return replace(draft, evidence=[changed[how], *draft.evidence[1:]])


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("snippet", "c1: snippet is not in block"),
        ("page", "c1: evidence is not on page"),
        ("window", "c1: evidence is outside the unit"),
        ("block", "c1: block b99 does not exist"),
    ],
)
def test_check_reports_a_draft_that_strays_from_its_window(how: str, problem: str) -> None:
    document, plans, drafts = written("tracemonkey.pdf")
    result = check_draft(document, plans[1], _tampered(drafts[1], document, plans[1], how))
    assert not result.ok
    assert any(found.startswith(problem) for found in result.problems), result.problems


def test_check_reports_structure() -> None:
    document = ParsedDocument("t", [Page(1)], [Block(0, 1, "paragraph", "Cats purr when content.")])
    plan = UnitPlan("u001", "Cats", (), (0,), ("fig1",))
    draft = NoteDraft("u001", " ", "", [NoteBlock("b1", "paragraph", "x"), NoteBlock("b1", "paragraph", "y"), NoteBlock("x", "paragraph", "")],
                      [Claim("c1", "Cats purr.", "b1")],
                      [Evidence("c9", "b1", 0, 1, None, "Cats purr")], ["fig2"])
    problems = check_draft(document, plan, draft).problems
    assert "title is empty" in problems and "summary is empty" in problems
    assert "b1: block key is not unique" in problems
    assert "x: block key is not b1, b2, …" in problems and "x: block is empty" in problems
    assert "c1: claim has no evidence" in problems and "c9: evidence names no claim" in problems
    assert "image fig2 is not in the unit" in problems


def test_contains_ignores_whitespace_and_hyphenation_but_not_words() -> None:
    text = "The parser was implemented in type-specialized code."
    assert contains(text, "was imple-\n  mented in type-\nspecialized")
    assert contains(text, "implemented in typespecialized code")
    assert not contains(text, "was implemented in typed code")
    assert not contains(text, "   ")


def test_markdown_shows_headings_summaries_claims_and_page_references() -> None:
    document, plans, drafts = written("tracemonkey.pdf")
    entries = [
        ({"title": plan.title, "level": len(plan.path) + 1, "path": list(plan.path), "note_id": n, "note_version_id": n}, draft.to_dict())
        for n, (plan, draft) in enumerate(zip(plans, drafts))
    ]
    labelled = NoteDraft("u999", "Preface", "A short preface.", [NoteBlock("b1", "code", "x := 1;"), NoteBlock("b2", "paragraph", "# not a heading")],
                         [Claim("c1", "A short preface.", "b2")],
                         [Evidence("c1", "b2", 0, 5, "iii", "A short preface.")])
    entries.append(({"title": "Preface", "level": 2, "path": ["Front"], "note_id": 99, "note_version_id": 99}, labelled.to_dict()))
    markdown = source_note_markdown(document.title, entries)
    assert markdown.startswith("# Trace-based Just-in-Time Type Specialization for Dynamic Languages\n")
    assert "\n## Introduction\n" in markdown and "\n### Blacklisting with Nesting\n" in markdown
    introduction = drafts[[plan.title for plan in plans].index("Introduction")]
    assert f"_{introduction.summary}_" in markdown
    assert f"- {introduction.claims[0].text} (p. {introduction.evidence[0].page})" in markdown
    assert "- A short preface. (p. iii, page 5)" in markdown
    assert "```\nx := 1;\n```" in markdown and "\\# not a heading" in markdown
