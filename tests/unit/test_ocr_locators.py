"""OCR locators and orientation arithmetic, without an engine."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.ocr.lines import OcrLine, OcrPage
from pipeline.ocr.locators import chunk_locator, page_segment
from pipeline.ocr.orientation import box_on_page, turned


def test_a_chunk_keeps_the_boxes_of_the_lines_its_span_overlaps():
    page = OcrPage("tesseract", [
        OcrLine("first line", (0.1, 0.1, 0.5, 0.12), 0.9),
        OcrLine("second line", (0.1, 0.2, 0.6, 0.22), 0.9),
        OcrLine("third", (0.1, 0.3, 0.3, 0.32), 0.9),
    ])
    segment = page_segment(3, page)
    assert segment.text == "first line\nsecond line\nthird"
    second = segment.text.index("second")
    locator = chunk_locator({**segment.locator, "char_start": second, "char_end": len(segment.text)})
    assert locator == {
        "page": 3, "ocr": "tesseract", "char_start": second, "char_end": len(segment.text),
        "boxes": [[0.1, 0.2, 0.6, 0.22], [0.1, 0.3, 0.3, 0.32]],
        "box_spans": [[0, 11], [12, 17]],
    }
    assert chunk_locator({"page": 1, "char_start": 0, "char_end": 4}) == {"page": 1, "char_start": 0, "char_end": 4}


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_a_box_found_on_the_turned_image_lands_on_the_same_pixels_of_the_page(rotation):
    page = np.zeros((40, 60), dtype=np.uint8)
    page[5:10, 20:50] = 255  # a "line": rows 5-9, columns 20-49
    upright = turned(page, rotation)
    rows, columns = np.nonzero(upright)
    height, width = upright.shape
    found = (columns.min() / width, rows.min() / height, (columns.max() + 1) / width, (rows.max() + 1) / height)
    assert box_on_page(found, rotation) == pytest.approx((20 / 60, 5 / 40, 50 / 60, 10 / 40), abs=1e-4)
