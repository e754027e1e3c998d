"""PDF extraction through PDFium on real corpus files: pages, labels, OCR needs, failures."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.extractors import extract, pick
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.pdf import PdfExtractor
from pipeline.extractors.pdf_lines import PageLine, clean_line, page_text
from pipeline.line_boxes import LINES
from pipeline.types import PipelineError


def _pdf(corpus_dir: Path, name: str) -> bytes:
    return (corpus_dir / "pdf" / name).read_bytes()


def _without_lines(locator: dict) -> dict:
    return {key: value for key, value in locator.items() if key != LINES}


def _segment_for_page(extraction, page: int):
    return next(segment for segment in extraction.segments if segment.locator["page"] == page)


def test_page_labels_follow_the_pdf(corpus_dir):
    result = extract(_pdf(corpus_dir, "GeoTopo-komprimiert.pdf"), filename="GeoTopo-komprimiert.pdf")
    assert result.mime == "application/pdf"
    assert result.page_count == 117
    assert [_without_lines(s.locator) for s in result.segments[:4]] == [
        {"page": 1, "page_label": "i"},
        {"page": 2, "page_label": "ii"},
        {"page": 3, "page_label": "iii"},
        {"page": 4, "page_label": "1"},
    ]
    assert result.title == "Geometrie und Topologie"
    assert result.pages_needing_ocr == []


def test_page_label_is_omitted_when_the_pdf_defines_none(corpus_dir):
    result = extract(_pdf(corpus_dir, "dmca.pdf"), filename="dmca.pdf")
    assert result.page_count == 18
    assert all(set(s.locator) == {"page", LINES} for s in result.segments)
    assert result.title == "The Digital Millennium Copyright Act of 1998"


@pytest.mark.parametrize(
    ("name", "page", "phrase"),
    [
        ("dmca.pdf", 3, "Registration as a Prerequisite to Suit"),
        ("i1040nr.pdf", 24, "Sample Check"),
    ],
)
def test_phrase_lands_on_its_page(corpus_dir, name, page, phrase):
    result = extract(_pdf(corpus_dir, name), filename=name)
    assert phrase in _segment_for_page(result, page).text
    assert sum(phrase in s.text for s in result.segments) == 1


def test_i1040nr_has_fifty_numbered_pages(corpus_dir):
    result = extract(_pdf(corpus_dir, "i1040nr.pdf"), filename="i1040nr.pdf")
    assert result.page_count == 50
    assert [s.locator["page"] for s in result.segments if "table" not in s.locator] == list(range(1, 51))
    assert _segment_for_page(result, 24).locator["page_label"] == "24"


def test_text_is_normalised(corpus_dir):
    result = extract(_pdf(corpus_dir, "dmca.pdf"), filename="dmca.pdf")
    text = "\n".join(s.text for s in result.segments)
    assert "\r" not in text and "\ufffe" not in text
    assert "implemented" in text  # PDFium marked "imple-mented" as a line-end hyphen
    assert all(ch in "\n\t" or ord(ch) >= 32 for ch in text)


def test_marked_hyphens_join_only_before_lower_case():
    raw = ["imple\ufffemented", "Schwarz\ufffeWeiß \x0c\x08end  ", "", "", "", "next"]
    assert page_text(PageLine(clean_line(line), None) for line in raw) == "implemented\nSchwarz-Weiß end\n\nnext"


def test_image_only_page_is_flagged_for_ocr_not_indexed(corpus_dir):
    result = extract(_pdf(corpus_dir, "c02-22.pdf"), filename="c02-22.pdf")
    assert result.page_count == 1
    assert result.segments == []
    assert result.pages_needing_ocr == [1]


def test_mixed_document_flags_only_empty_pages(corpus_dir):
    result = extract(_pdf(corpus_dir, "multipage.pdf"), filename="multipage.pdf")
    assert result.pages_needing_ocr == [1, 2, 3, 5, 6]
    assert [s.locator["page"] for s in result.segments] == [4]


def test_pdfium_recovers_corrupted_stream(corpus_dir):
    result = extract(_pdf(corpus_dir, "zen_of_python_corrupted.pdf"), filename="zen.pdf")
    assert result.segments[0].text.startswith("Beautiful is better than ugly")
    assert result.title is None  # its /Title is the file name "zen_of_python.txt"


@pytest.mark.parametrize("name", ["aes-256.pdf", "libreoffice-writer-password.pdf"])
def test_encrypted_pdf(corpus_dir, name):
    with pytest.raises(PipelineError) as caught:
        extract(_pdf(corpus_dir, name), filename=name)
    assert caught.value.code == "PDF_ENCRYPTED"


def test_invalid_pdf_is_corrupt(corpus_dir):
    with pytest.raises(PipelineError) as caught:
        extract(_pdf(corpus_dir, "invalid.pdf"), filename="invalid.pdf")
    assert caught.value.code == "PDF_CORRUPT"


def test_empty_pdf(corpus_dir):
    data = _pdf(corpus_dir, "empty.pdf")
    with pytest.raises(PipelineError) as caught:
        extract(data, filename="empty.pdf")
    assert caught.value.code == "EMPTY_FILE"
    with pytest.raises(PipelineError) as caught:
        PdfExtractor().extract(data, filename="empty.pdf", mime="application/pdf", limits=ExtractLimits())
    assert caught.value.code == "PDF_CORRUPT"


def test_garbage_labelled_as_pdf_is_corrupt():
    with pytest.raises(PipelineError) as caught:
        extract(os.urandom(4096), filename="report.pdf", mime="application/pdf")
    assert caught.value.code == "PDF_CORRUPT"
    assert len(caught.value.message) <= PipelineError.max_message


def test_truncated_pdf_never_leaks_a_library_error(corpus_dir):
    data = _pdf(corpus_dir, "i1040nr.pdf")
    for cut in (10, len(data) // 3, len(data) - 100):
        try:
            extract(data[:cut], filename="cut.pdf")
        except PipelineError as error:
            assert error.code == "PDF_CORRUPT"


def test_pdf_is_sniffed_without_a_mime_or_extension(corpus_dir):
    result = extract(_pdf(corpus_dir, "dmca.pdf"), filename="download", mime="application/octet-stream")
    assert result.mime == "application/pdf"
    assert pick("application/pdf", "x").name == "pdf"


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_repeated_extraction_does_not_grow_memory(corpus_dir):
    """A long job extracts hundreds of PDFs in one worker: PDFium memory must be freed each time."""
    data = _pdf(corpus_dir, "GeoTopo-komprimiert.pdf")

    def resident_mib() -> float:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    for _ in range(3):
        extract(data, filename="g.pdf")
    before = resident_mib()
    for _ in range(15):  # 2 s each with line boxes and the table search on its 117 pages
        extract(data, filename="g.pdf")
    assert resident_mib() - before < 20


@pytest.mark.parametrize("name", ["dmca.pdf", "federal-register-2020-17221.pdf"])
def test_every_line_of_a_text_pdf_has_a_box_over_its_words(corpus_dir, name):
    """pdfplumber, reading the same pages on its own, finds each line's characters inside the line's
    box: the box a citation of that line is highlighted with."""
    import pdfplumber
    import pypdfium2

    result = extract(_pdf(corpus_dir, name), filename=name)
    document = pypdfium2.PdfDocument(_pdf(corpus_dir, name))
    checked = 0
    with pdfplumber.open(corpus_dir / "pdf" / name) as pdf:
        for segment in [s for s in result.segments if s.locator["page"] <= 3]:
            page = pdf.pages[segment.locator["page"] - 1]
            left, bottom, right, top = document[segment.locator["page"] - 1].get_bbox()
            width, height = right - left, top - bottom
            lines = segment.locator[LINES]
            assert len(lines) == len([line for line in segment.text.split("\n") if line.strip()])
            for start, end, box_left, box_top, box_right, box_bottom in lines:
                inside = "".join(
                    char["text"] for char in page.chars
                    if box_left * width - 1 <= (char["x0"] + char["x1"]) / 2 <= box_right * width + 1
                    and box_top * height - 1 <= (char["top"] + char["bottom"]) / 2 - (page.height - height) <= box_bottom * height + 1
                )
                assert _letters(segment.text[start:end]) in _letters(inside)
                checked += 1
    assert checked > 80


def _letters(text: str) -> str:
    return "".join(char for char in text.lower() if char.isalnum())
