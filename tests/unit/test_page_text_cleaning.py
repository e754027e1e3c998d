"""Clean page text from real corpus PDFs: running headers and footers are not content (no chunk
starts with one), printed page numbers become labels when the PDF defines none, and reference
lists are marked so that answers do not quote them as claims."""
from __future__ import annotations

from pathlib import Path

from pipeline.answering.extractive import ExtractiveSettings, not_a_claim, select_quotes
from pipeline.answering.types import EvidenceItem
from pipeline.chunker import chunk_segments
from pipeline.extractors import extract
from pipeline.extractors.clean_pages import DocumentPages
from pipeline.extractors.page_furniture import remove_running_lines
from pipeline.extractors.pdf_lines import PageLine
from pipeline.extractors.reference_lists import REFERENCES, mark_reference_lists
from pipeline.line_boxes import LINES
from pipeline.types import Segment

RUNNING = ("Copyright Office Summary", "The Digital Millennium Copyright Act of 1998", "Federal Register / Vol.",
           "VerDate", "jbell on")


def _extracted(corpus_dir: Path, name: str):  # type: ignore[no-untyped-def]
    return extract((corpus_dir / "pdf" / name).read_bytes(), filename=name)


def test_no_chunk_of_the_dmca_summary_or_the_federal_register_starts_with_a_running_header(corpus_dir: Path) -> None:
    for name in ("dmca.pdf", "federal-register-2020-17221.pdf"):
        extraction = _extracted(corpus_dir, name)
        chunks = chunk_segments(extraction.segments, source_fingerprint="f")
        assert chunks
        openings = [chunk.text[:60] for chunk in chunks if chunk.text.lstrip().startswith(RUNNING)]
        assert openings == [], name
        assert not any(line.startswith(("Copyright Office Summary", "jbell on")) for s in extraction.segments
                       for line in s.text.split("\n")), name


def test_the_dmca_title_printed_on_its_first_page_stays(corpus_dir: Path) -> None:
    first = _extracted(corpus_dir, "dmca.pdf").segments[0]
    assert "THE DIGITAL MILLENNIUM COPYRIGHT ACT OF 1998" in first.text


def test_printed_page_numbers_become_labels_when_the_pdf_defines_none(corpus_dir: Path) -> None:
    register = _extracted(corpus_dir, "federal-register-2020-17221.pdf")
    assert [(s.locator["page"], s.locator["page_label"]) for s in register.segments[:3]] == [
        (1, "47698"), (2, "47699"), (3, "47700"),
    ]
    thoma = _extracted(corpus_dir, "thoma-creativity-in-ml.pdf")
    assert all("page_label" not in s.locator for s in thoma.segments), "printed numbers equal to the physical ones"
    assert not any(s.text.split("\n")[0].strip().isdigit() for s in thoma.segments), "bare page numbers are furniture"


WORDS = ("apple", "birch", "cedar", "daisy", "elder", "fig", "grape", "hazel", "iris", "juniper", "kale", "lime",
         "maple", "nettle", "oak", "pear", "quince", "rose", "sage", "thyme")


def _page(page: int, body_word: str, *middle: str) -> list[str]:
    """A page of ``Page n of 4``, six lines, ``middle``, six lines: its words ``body_word``'s own."""
    words = ("one", "two", "three", "four", "five", "six")
    return [f"Page {page} of 4", *(f"Paragraph {w} about {body_word}{w}." for w in words), *middle,
            *(f"Closing {w} about {body_word}{w}x." for w in words)]


def _kept_text(pages: dict[int, list[str]]) -> dict[int, str]:
    clean = remove_running_lines(pages)
    return {page: "\n".join(pages[page][index] for index in kept) for page, kept in clean.kept.items()}


def test_lines_repeated_in_the_middle_of_pages_are_content() -> None:
    middle = ("A table header", *(f"row {n}" for n in range(20)))
    pages = {page: _page(page, word, *middle) for page, word in enumerate(WORDS[:4], start=1)}
    texts = _kept_text(pages)
    assert all(text.startswith("Paragraph one") and "\n".join(middle) in text for text in texts.values())
    assert _kept_text({1: ["Header", "x"], 2: ["Header", "y"]}) == {1: "Header\nx", 2: "Header\ny"}


def test_a_page_that_repeats_the_page_before_is_not_furniture() -> None:
    """cardinal.pdf is one brochure page scanned four times, turned: every line of it repeats on
    every page, and none of them is a running header (OCR misreads a word here and there)."""
    brochure = _page(1, "apple", *(f"The brochure's line {n} on {word}." for n, word in enumerate(WORDS)))
    pages = {page: [line.replace("three", "thr ee") if page == 3 else line for line in brochure] for page in range(1, 5)}
    assert _kept_text(pages) == {page: "\n".join(lines) for page, lines in pages.items()}


def test_a_letterhead_heavier_than_the_slide_is_still_furniture() -> None:
    """Slides whose running lines are most of their words: repeats are told by what is left."""
    pages = {
        page: ["Acme Corporation Quarterly Business Review", "Confidential Internal Use Only", f"{word.title()} and {WORDS[page + 7]}",
               f"Notes on {WORDS[page + 12]}", "Copyright 2023 Acme Corporation All Rights Reserved", f"Page {page}"]
        for page, word in enumerate(WORDS[:7], start=1)
    }
    assert _kept_text(pages) == {page: "\n".join(lines[2:4]) for page, lines in pages.items()}


def test_a_body_line_with_the_text_of_a_running_header_keeps_its_own_box() -> None:
    """A masthead of six running lines, and a page whose text opens with a line printed like one
    of them: line tables are built from the lines that stayed, so the masthead's box is nobody's."""
    masthead = [(f"Masthead line {n}", (0.1, 0.01 * n, 0.9, 0.01 * n + 0.008)) for n in range(1, 7)]
    body = (0.2, 0.61, 0.8, 0.63)
    pages = {
        page: [*(PageLine(text, box) for text, box in masthead),
               *(PageLine(text, (0.1, 0.1 + 0.04 * n, 0.9, 0.12 + 0.04 * n)) for n, text in enumerate(_page(page, word)[1:]))]
        for page, word in enumerate(WORDS[:4], start=1)
    }
    pages[2].insert(6, PageLine("Masthead line 3", body))
    segments = DocumentPages(pages).segments()
    assert [segment.text.split("\n")[0] for segment in segments] == [
        "Paragraph one about appleone.", "Masthead line 3", "Paragraph one about cedarone.", "Paragraph one about daisyone."]
    assert segments[1].locator[LINES][0][2:] == list(body)


def test_a_reference_list_is_marked_from_its_heading_to_an_appendix(corpus_dir: Path) -> None:
    naacl = _extracted(corpus_dir, "naacl06-shinyama.pdf").segments
    marked = [s for s in naacl if s.locator.get("section") == REFERENCES]
    assert [s.locator["page"] for s in marked] == [8] and marked[0].text.startswith("References")
    above = next(s for s in naacl if s.locator["page"] == 8 and "section" not in s.locator)
    assert "References" not in above.text and above.text, "the text above the heading stays unmarked"
    thoma = _extracted(corpus_dir, "thoma-creativity-in-ml.pdf").segments
    assert {s.locator["page"] for s in thoma if s.locator.get("section") == REFERENCES} == {5}
    assert any(s.locator["page"] == 6 and "section" not in s.locator and s.text.startswith("APPENDIX A") for s in thoma)
    assert mark_reference_lists([Segment("No list here", {"page": 1})]) == [Segment("No list here", {"page": 1})]


def test_answers_never_quote_a_reference_list() -> None:
    entry = "Meyers, A. et al. 2001. Covering treebanks with GLARF. In Proceedings of the ACL workshop."
    claim = "GLARF is a logical feature structure proposed by Meyers and colleagues for treebanks."
    evidence = [
        EvidenceItem("ch_ref", "r", "naacl", "s", entry, {"page": 8, "section": REFERENCES}, 2.0),
        EvidenceItem("ch_body", "r", "naacl", "s", claim, {"page": 3}, 1.0),
    ]
    quotes = select_quotes("What is GLARF, proposed by Meyers?", evidence, ExtractiveSettings())
    assert [quote.evidence.chunk_id for quote in quotes] == ["ch_body"]
    assert select_quotes("What is GLARF, proposed by Meyers?", evidence[:1], ExtractiveSettings()) == []


def test_captions_and_table_of_contents_lines_are_never_quoted() -> None:
    caption = "Figure 3: Trace tree blacklisting of hot loops in the TraceMonkey tracing compiler."
    contents = "4.2 Trace tree blacklisting of hot loops ........................ 17"
    claim = "TraceMonkey blacklists hot loops whose trace tree keeps failing, so the compiler stops retrying them."
    evidence = [
        EvidenceItem("ch_caption", "r", "trace", "s", caption, {"page": 5}, 3.0),
        EvidenceItem("ch_toc", "r", "trace", "s", contents, {"page": 2}, 2.0),
        EvidenceItem("ch_body", "r", "trace", "s", claim, {"page": 6}, 1.0),
    ]
    question = "What is trace tree blacklisting of hot loops in TraceMonkey?"
    assert [quote.evidence.chunk_id for quote in select_quotes(question, evidence, ExtractiveSettings())] == ["ch_body"]
    assert select_quotes(question, evidence[:2], ExtractiveSettings()) == []
    assert not not_a_claim("Table 3 shows that the tracing compiler is faster on loops.")


def test_a_scan_that_skips_a_page_keeps_the_number_each_page_prints(corpus_dir: Path) -> None:
    """The Vicksburg sample prints 49, 50, 52, 53, 54, 55 (its scan has no page 51): each page's
    label is the number it prints, not the physical page plus the commonest offset."""
    vicksburg = _extracted(corpus_dir, "Seige_of_Vicksburg_Sample_OCR.pdf")
    assert [s.locator["page_label"] for s in vicksburg.segments] == ["49", "50", "52", "53", "54", "55"]


def test_pages_read_by_ocr_join_a_document_with_tables_in_page_order() -> None:
    """A table stays after its page's text with the page's own locator; the page OCR read comes
    after it, saying so; a page OCR found blank adds nothing."""
    lines = {1: [PageLine("Text of page one.", (0.1, 0.1, 0.9, 0.12))], 3: [PageLine("Text of page three.", None)]}
    table = Segment("Row: 1", {"table": 1, LINES: [[0, 6, 0.1, 0.5, 0.9, 0.52]]})
    document = DocumentPages(lines, defined_labels={1: "i", 2: "ii", 3: "iii"}, tables={1: [table]})
    read = document.with_ocr({2: [PageLine("Scanned page two.", (0.1, 0.2, 0.8, 0.22))], 4: []}, "tesseract")
    assert [(s.text, s.locator) for s in read.segments()] == [
        ("Text of page one.", {"page": 1, "page_label": "i", LINES: [[0, 17, 0.1, 0.1, 0.9, 0.12]]}),
        ("Row: 1", {"page": 1, "page_label": "i", "table": 1, LINES: [[0, 6, 0.1, 0.5, 0.9, 0.52]]}),
        ("Scanned page two.", {"page": 2, "ocr": "tesseract", "page_label": "ii", LINES: [[0, 17, 0.1, 0.2, 0.8, 0.22]]}),
        ("Text of page three.", {"page": 3, "page_label": "iii", LINES: []}),
    ]
