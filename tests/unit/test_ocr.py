"""OCR with the real engines and their real models on corpus scans and images: text, orientation,
boxes, and the bounded errors of bombs, corrupt images and pages that take too long."""
from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from pipeline.embedder import HashingEmbedder
from pipeline.extraction_cache import attachment_inputs
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.reference_lists import REFERENCES
from pipeline.fetch import FetchPolicy
from pipeline.ocr.engines import missing
from pipeline.ocr.reading import ocr_error, ocr_helper
from pipeline.ocr.settings import OcrSettings
from pipeline.source_processing import ReadSource, extract_read, process_source
from pipeline.types import PipelineError, SourceRef
from support.ocr_truth import best_match_accuracy, character_accuracy, truth_pages
from support.services import require

ENGINES = ("tesseract", "easyocr")
LINN = truth_pages()[0].truth
OCR_TEST_TRUTH = truth_pages()[-1].truth


def _limits(engine: str, **ocr: object) -> ExtractLimits:
    return ExtractLimits(ocr=replace(OcrSettings(engine=engine), **ocr))


def _extract(path: Path, limits: ExtractLimits, data: bytes | None = None):
    data = path.read_bytes() if data is None else data
    return extract_read(ReadSource(data, "hash", attachment_inputs(path.name), {}), limits)


def _require(engine: str) -> None:
    require(missing(engine) is None, f"OCR engine {engine}: {missing(engine)}")


@pytest.fixture(autouse=True, scope="module")
def _fresh_ocr_helper():
    """The module's engines start in a helper of their own (easyocr once: ~8 s), ended afterwards."""
    ocr_helper().close()
    yield
    ocr_helper().close()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_image_only_pdf_page_is_read_with_its_boxes(engine, corpus_dir):
    _require(engine)
    seen: list[tuple[int, int, int]] = []
    extraction = extract_read(
        ReadSource((corpus_dir / "pdf" / "ocr_test.pdf").read_bytes(), "h", attachment_inputs("ocr_test.pdf"), {}),
        _limits(engine),
        before_page=lambda *page: seen.append(page),
    )
    assert seen == [(1, 1, 1)]
    assert extraction.pages_needing_ocr == [] and extraction.ocr_errors == []
    [segment] = extraction.segments
    assert character_accuracy(segment.text, OCR_TEST_TRUTH) > 0.95
    assert segment.locator["page"] == 1 and segment.locator["ocr"] == engine
    spans = segment.locator["lines"]
    assert spans and all(0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 for _, _, x0, y0, x1, y1 in spans)
    assert [segment.text[int(start):int(end)] for start, end, *_ in spans] == segment.text.split("\n")


@pytest.mark.parametrize("engine", ENGINES)
def test_an_image_file_is_read(engine, corpus_dir):
    _require(engine)
    extraction = _extract(corpus_dir / "images" / "english.png", _limits(engine))
    assert extraction.mime == "image/png" and extraction.page_count == 1
    assert character_accuracy(extraction.segments[0].text, truth_pages()[6].truth) > 0.9


def test_a_scanned_printout_reads_as_its_article(corpus_dir):
    """epson.pdf: a printed Wikipedia page scanned by a printer; MANIFEST.md gives its first sentence."""
    _require("tesseract")
    [segment] = _extract(corpus_dir / "pdf" / "epson.pdf", _limits("tesseract")).segments
    first = (
        "Optical character recognition (optical character reader, OCR) is the mechanical or electronic conversion "
        "of images of typed, handwritten or printed text into machine-encoded text"
    )
    assert best_match_accuracy(segment.text, first) > 0.95, segment.text[:600]


def test_tesseract_reads_every_page_of_the_turned_pdf(corpus_dir):
    """cardinal.pdf holds the same brochure turned 0, 90, 180 and 270 degrees; each page reads
    as the brochure, and the title's box sits where the turned page shows it."""
    _require("tesseract")
    extraction = _extract(corpus_dir / "pdf" / "cardinal.pdf", _limits("tesseract"))
    assert [segment.locator["page"] for segment in extraction.segments] == [1, 2, 3, 4]
    for segment in extraction.segments:
        assert character_accuracy(segment.text, LINN) > 0.95, segment.locator["page"]
    title_boxes = [segment.locator["lines"][0][2:] for segment in extraction.segments]
    centres = [((x0 + x1) / 2, (y0 + y1) / 2) for x0, y0, x1, y1 in title_boxes]
    assert centres[0][1] < 0.1 and centres[1][0] > 0.9 and centres[2][1] > 0.9 and centres[3][0] < 0.1


def test_a_scanned_book_read_by_ocr_loses_its_running_line_and_keeps_its_printed_numbers(corpus_dir):
    """The Vicksburg pages as pictures only (a multi-page TIFF, as a phone scanning app writes):
    OCR's text is cleaned as a text layer's is, so "THE SIEGE OF VICKSBURG" opens no chunk and the
    numbers the pages print (49, 50, 52: the scan has no page 51) are their labels."""
    _require("tesseract")
    with pdfium.PdfDocument((corpus_dir / "pdf" / "Seige_of_Vicksburg_Sample_OCR.pdf").read_bytes()) as document:
        frames = [document[index].render(scale=150 / 72, grayscale=True).to_pil() for index in range(len(document))]
    tiff = io.BytesIO()
    frames[0].save(tiff, format="TIFF", save_all=True, append_images=frames[1:], compression="tiff_deflate")
    extraction = _extract(Path("vicksburg.tiff"), _limits("tesseract"), tiff.getvalue())
    assert [segment.locator.get("page_label") for segment in extraction.segments] == ["49", "50", "52", "53", "54", "55"]
    assert not any("SIEGE OF" in segment.text for segment in extraction.segments)  # the running line, in capitals
    assert all(segment.locator["ocr"] == "tesseract" for segment in extraction.segments)


def test_the_labels_a_scanned_pdf_defines_label_its_ocr_pages(corpus_dir):
    """GeoTopo's first four pages as pictures only, its /PageLabels kept (i, ii, iii, 1): the
    pages OCR reads carry the document's own labels, as pages with text do."""
    _require("tesseract")
    with pdfium.PdfDocument((corpus_dir / "pdf" / "GeoTopo-komprimiert.pdf").read_bytes()) as document:
        for index in range(len(document) - 1, 3, -1):
            document.del_page(index)
        scanned = _scanned(document, range(4), dpi=100)
    extraction = _extract(Path("geotopo-scan.pdf"), _limits("tesseract", dpi=100), scanned)
    assert [(s.locator["page"], s.locator.get("page_label"), s.locator["ocr"]) for s in extraction.segments] == [
        (1, "i", "tesseract"), (2, "ii", "tesseract"), (3, "iii", "tesseract"), (4, "1", "tesseract")]


def test_a_partly_scanned_book_is_cleaned_as_one_document(corpus_dir):
    """Vicksburg with its third and fourth pages as pictures only: the running line leaves the
    pages OCR read too, and they carry the numbers they print (52, 53) like the pages with text
    around them; cleaned apart, the two scanned pages were too few to tell a running line and
    took no printed numbers beside labelled pages."""
    _require("tesseract")
    with pdfium.PdfDocument((corpus_dir / "pdf" / "Seige_of_Vicksburg_Sample_OCR.pdf").read_bytes()) as document:
        scanned = _scanned(document, [2, 3], dpi=150)
    extraction = _extract(Path("vicksburg-part-scan.pdf"), _limits("tesseract", dpi=150), scanned)
    assert [(s.locator["page"], s.locator.get("page_label"), s.locator.get("ocr")) for s in extraction.segments] == [
        (1, "49", None), (2, "50", None), (3, "52", "tesseract"), (4, "53", "tesseract"), (5, "54", None), (6, "55", None)]
    assert not any("SIEGE OF" in segment.text for segment in extraction.segments)


def test_a_reference_list_running_onto_a_scanned_page_is_marked_there(corpus_dir):
    """TableFormer's last page (the reference list's second page) as a picture only: OCR's text of
    it belongs to the list that began on the page before, so answers do not quote it as claims."""
    _require("tesseract")
    with pdfium.PdfDocument((corpus_dir / "pdf" / "tableformer-2203.00274.pdf").read_bytes()) as document:
        scanned = _scanned(document, [9], dpi=150)
    extraction = _extract(Path("tableformer-part-scan.pdf"), _limits("tesseract", dpi=150), scanned)
    last = [segment for segment in extraction.segments if segment.locator["page"] == 10]
    assert last and all(s.locator["ocr"] == "tesseract" and s.locator.get("section") == REFERENCES for s in last)


def _scanned(document: pdfium.PdfDocument, indexes: Iterable[int], *, dpi: int) -> bytes:
    """``document`` with the pages at ``indexes`` turned into pictures of themselves (no text layer)."""
    for index in indexes:
        page = document[index]
        bitmap = page.render(scale=dpi / 72, grayscale=True)
        for drawn in list(page.get_objects()):
            page.remove_obj(drawn)
        picture = pdfium.PdfImage.new(document)
        picture.set_bitmap(bitmap)
        picture.set_matrix(pdfium.PdfMatrix().scale(*page.get_size()))
        page.insert_obj(picture)
        page.gen_content()
    scanned = io.BytesIO()
    document.save(scanned)
    return scanned.getvalue()


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_easyocr_reads_a_turned_page_upright(turn, corpus_dir):
    """easyocr settles a page's orientation itself (the infographic turned each way: a small page,
    so CI reads it three times in the time one turned brochure page takes; tesseract reads the
    corpus's turned PDF above)."""
    _require("easyocr")
    picture = Image.open(corpus_dir / "images" / "english.png").rotate(-turn, expand=True)  # PIL turns counter-clockwise
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    [segment] = _extract(corpus_dir / "images" / "english.png", _limits("easyocr"), data=buffer.getvalue()).segments
    assert character_accuracy(segment.text, truth_pages()[6].truth) > 0.9
    first_line = segment.locator["lines"][0][2:]  # "Reduce your risk ...", the headline
    centre_x, centre_y = (first_line[0] + first_line[2]) / 2, (first_line[1] + first_line[3]) / 2
    assert {90: centre_x > 0.7, 180: centre_y > 0.7, 270: centre_x < 0.3}[turn], (turn, first_line)


def test_chunks_of_a_scan_cite_their_page_and_the_boxes_of_their_lines(corpus_dir):
    _require("tesseract")
    path = corpus_dir / "pdf" / "linn.pdf"
    result = process_source(
        "s1", SourceRef("r1", "files", "attachment", path.name),
        read_attachment=lambda: (path.read_bytes(), path.name),
        policy=FetchPolicy(), embedder=HashingEmbedder(), limits=_limits("tesseract"),
    )
    assert result.status == "extracted" and result.error_code is None
    rows = result.evidence.chunks
    assert len(rows) > 1 and {row["locator"]["page"] for row in rows} == {1}
    for row in rows:
        locator = row["locator"]
        assert locator["ocr"] == "tesseract" and "lines" not in locator
        assert 0 < len(locator["boxes"]) == len(locator["box_spans"]) < 60
        assert all(0 <= start < end <= len(row["text"]) for start, end in locator["box_spans"])
    first = rows[0]["locator"]
    assert first["boxes"][0] == pytest.approx([0.346, 0.04, 0.65, 0.066], abs=0.01)  # the title
    assert rows[0]["text"][slice(*first["box_spans"][0])] == "The LinnSequencer"


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels and holds one compressed row: a
    decompression bomb's header without its payload."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _result(name: str, data: bytes, limits: ExtractLimits):
    return process_source(
        "s1", SourceRef("r1", "files", "attachment", name),
        read_attachment=lambda: (data, name),
        policy=FetchPolicy(), embedder=HashingEmbedder(), limits=limits,
    )


@pytest.mark.parametrize("width,height", [(100_000, 100_000), (8_000, 6_000)])
def test_an_image_above_the_pixel_cap_is_refused_before_decoding(width, height):
    result = _result("bomb.png", _png_header_only(width, height), _limits("tesseract"))
    assert (result.status, result.error_code) == ("error", "IMAGE_TOO_LARGE")
    assert "GNOSI_OCR_MAX_PIXELS" in result.error and len(result.error) <= 500


def test_a_large_pdf_page_is_rendered_within_the_pixel_cap():
    from pipeline.ocr.page_images import pdf_page_image

    picture = Image.new("L", (2000, 2000), 255)
    buffer = io.BytesIO()
    picture.save(buffer, format="PDF", resolution=10)  # 200 x 200 inches: 3.6 G pixels at 300 dpi
    pixels = pdf_page_image(buffer.getvalue(), 1, dpi=300, max_pixels=1_000_000)
    assert pixels.shape[0] * pixels.shape[1] <= 1_000_000


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\nnot a png at all", b"GIF89a" + b"\0" * 40])
def test_a_file_that_is_no_readable_image_fails_with_a_bounded_error(data):
    result = _result("broken.png", data, _limits("tesseract"))
    assert (result.status, result.error_code) == ("error", "IMAGE_CORRUPT")


def test_a_truncated_image_fails_its_page_not_the_worker(corpus_dir):
    _require("tesseract")
    data = (corpus_dir / "images" / "english.png").read_bytes()
    result = _result("english.png", data[: len(data) // 3], _limits("tesseract"))
    assert (result.status, result.error_code) == ("error", "IMAGE_CORRUPT")
    assert result.meta["pages_needing_ocr"] == [1]
    assert _result("english.png", data, _limits("tesseract")).status == "extracted"


def test_a_page_past_its_time_ends_as_ocr_timeout_and_the_next_source_is_read(corpus_dir):
    _require("tesseract")
    linn = (corpus_dir / "images" / "linn.png").read_bytes()
    slow = _result("linn.png", linn, _limits("tesseract", page_timeout_seconds=1))
    assert (slow.status, slow.error_code) == ("error", "OCR_TIMEOUT")
    assert "GNOSI_OCR_PAGE_TIMEOUT_SECONDS" in slow.error
    small = (corpus_dir / "images" / "english.png").read_bytes()
    assert _result("english.png", small, _limits("tesseract")).status == "extracted"


def test_with_ocr_off_a_scan_says_what_it_needs(corpus_dir):
    result = _result("c02-22.pdf", (corpus_dir / "pdf" / "c02-22.pdf").read_bytes(), _limits("off"))
    assert (result.status, result.error_code) == ("error", "NEEDS_OCR")
    assert "GNOSI_OCR_ENGINE" in result.error


def test_a_pdf_with_a_text_layer_is_not_sent_to_ocr(corpus_dir):
    seen: list[tuple[int, int, int]] = []
    path = corpus_dir / "pdf" / "dmca.pdf"
    extract_read(
        ReadSource(path.read_bytes(), "h", attachment_inputs(path.name), {}), _limits("tesseract"),
        before_page=lambda *page: seen.append(page),
    )
    assert seen == []


def test_an_engine_that_dies_on_a_page_is_named_as_an_ocr_crash():
    """The OCR helper is a decoder helper; how it ended is worded for OCR (here: a real abort in it)."""
    with pytest.raises(PipelineError) as died:
        ocr_helper().run(os.abort, memory_mb=1024, timeout_seconds=30)
    named = ocr_error(died.value, _limits("tesseract"))
    assert named.code == "OCR_CRASHED" and named.message.startswith("The OCR engine crashed on this page"), named
    assert ocr_error(PipelineError("EXTRACT_TIMEOUT", "x"), _limits("tesseract")).code == "OCR_TIMEOUT"


def test_easyocr_reads_a_line_touching_the_page_edge(corpus_dir):
    """easyocr pads its boxes, so a line at the top left edge starts at a negative pixel; the page
    is still read (a crop there came out empty and failed the whole source)."""
    _require("easyocr")
    picture = Image.open(corpus_dir / "images" / "english.png")
    edge = picture.crop((360, 60, picture.width, picture.height))  # lines start at the left edge
    buffer = io.BytesIO()
    edge.save(buffer, format="PNG")
    result = _result("edge.png", buffer.getvalue(), _limits("easyocr"))
    assert result.status == "extracted", (result.error_code, result.error)
    assert "flu-like symptoms" in result.evidence.chunks[0]["text"]


def test_an_eps_file_named_png_is_not_run_through_ghostscript():
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"
    result = _result("poster.png", eps, _limits("tesseract"))
    assert (result.status, result.error_code) == ("error", "IMAGE_CORRUPT")


def test_a_missing_frame_is_a_corrupt_image_not_a_crash(corpus_dir):
    from pipeline.ocr.page_images import image_frame

    with pytest.raises(PipelineError) as missing_frame:
        image_frame((corpus_dir / "images" / "english.png").read_bytes(), 2, max_pixels=40_000_000)
    assert missing_frame.value.code == "IMAGE_CORRUPT"


def test_a_scan_extracted_where_ocr_could_not_run_is_read_again_where_it_can(monkeypatch):
    """The cache key says whether the engine could run, so installing tesseract later reads the
    scans that waited instead of reusing their empty extraction."""
    from pipeline.extraction_cache import attachment_inputs, extraction_key
    from pipeline.ocr import tesseract

    limits = _limits("tesseract")
    ready = extraction_key("hash", attachment_inputs("scan.pdf"), limits)
    monkeypatch.setattr(tesseract.shutil, "which", lambda name: None)
    assert extraction_key("hash", attachment_inputs("scan.pdf"), limits) != ready
