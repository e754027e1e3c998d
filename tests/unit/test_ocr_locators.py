"""Line tables carried to chunks (OCR and PDF text), and orientation arithmetic, without an engine."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.chunker import ChunkSettings, chunk_segments
from pipeline.line_boxes import LINES
from pipeline.ocr.lines import OcrLine, OcrPage
from pipeline.extractors.clean_pages import DocumentPages
from pipeline.ocr.locators import with_read_pages
from pipeline.ocr.orientation import box_on_page, turned
from pipeline.types import Segment


def test_a_chunk_keeps_the_boxes_of_the_lines_its_span_overlaps():
    page = OcrPage("tesseract", [
        OcrLine("first line", (0.1, 0.1, 0.5, 0.12), 0.9),
        OcrLine("second line", (0.1, 0.2, 0.6, 0.22), 0.9),
        OcrLine("third", (0.1, 0.3, 0.3, 0.32), 0.9),
    ])
    (segment,) = with_read_pages(DocumentPages(), {3: page}).segments()
    assert segment.text == "first line\nsecond line\nthird"
    first, second = chunk_segments([segment], source_fingerprint="f", settings=ChunkSettings(17, 0))
    assert [first.text, second.text] == ["first line second", "line third"]
    assert second.locator == {
        "page": 3, "ocr": "tesseract", "char_start": segment.text.index("line\nthird"), "char_end": len(segment.text),
        "boxes": [[0.1, 0.2, 0.6, 0.22], [0.1, 0.3, 0.3, 0.32]],
        "box_spans": [[0, 4], [5, 10]],
    }
    assert first.locator["boxes"] == [[0.1, 0.1, 0.5, 0.12], [0.1, 0.2, 0.6, 0.22]]
    assert first.locator["box_spans"] == [[0, 10], [11, 17]]


def test_box_spans_hold_in_the_chunk_text_where_the_chunker_collapsed_whitespace():
    """PDF text keeps runs of spaces and blank lines that the chunker collapses: the spans are
    offsets in the chunk's own text, where the viewer looks for the quote."""
    text = "Alpha   beta\n\n\nGamma  delta"
    lines = [[0, 12, 0.1, 0.1, 0.5, 0.12], [15, 27, 0.1, 0.2, 0.5, 0.22]]
    (chunk,) = chunk_segments([Segment(text, {"page": 1, LINES: lines})], source_fingerprint="f")
    assert chunk.text == "Alpha beta\nGamma delta"
    assert chunk.locator["box_spans"] == [[0, 10], [11, 22]]
    assert [chunk.text[a:b] for a, b in chunk.locator["box_spans"]] == ["Alpha beta", "Gamma delta"]


def test_segments_sharing_a_locator_keep_their_own_lines():
    one = Segment("one", {"page": 1, LINES: [[0, 3, 0.1, 0.1, 0.2, 0.2]]})
    two = Segment("two", {"page": 1, LINES: [[0, 3, 0.1, 0.5, 0.2, 0.6]]})
    (chunk,) = chunk_segments([one, two], source_fingerprint="f")
    assert chunk.text == "one\ntwo"
    assert chunk.locator["box_spans"] == [[0, 3], [4, 7]]
    assert chunk.locator["boxes"] == [[0.1, 0.1, 0.2, 0.2], [0.1, 0.5, 0.2, 0.6]]


def test_a_chunk_of_a_segment_without_a_line_table_has_no_boxes():
    (chunk,) = chunk_segments([Segment("plain", {"page": 1})], source_fingerprint="f")
    assert chunk.locator == {"page": 1, "char_start": 0, "char_end": 5}


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_a_box_found_on_the_turned_image_lands_on_the_same_pixels_of_the_page(rotation):
    page = np.zeros((40, 60), dtype=np.uint8)
    page[5:10, 20:50] = 255  # a "line": rows 5-9, columns 20-49
    upright = turned(page, rotation)
    rows, columns = np.nonzero(upright)
    height, width = upright.shape
    found = (columns.min() / width, rows.min() / height, (columns.max() + 1) / width, (rows.max() + 1) / height)
    assert box_on_page(found, rotation) == pytest.approx((20 / 60, 5 / 40, 50 / 60, 10 / 40), abs=1e-4)
