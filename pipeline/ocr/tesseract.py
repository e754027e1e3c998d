"""Debian's tesseract (5.x, LSTM) through pytesseract: orientation from its OSD pass, lines from its TSV.

Each call starts a ``tesseract`` process, so a page that hangs is ended by pytesseract's timeout
even if the helper running it is killed first; ``OMP_THREAD_LIMIT=1`` keeps it to one thread.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from itertools import groupby

import numpy as np
import pytesseract
from PIL import Image

from pipeline.ocr.engines import OcrEngine, page_timeout
from pipeline.ocr.lines import OcrLine, OcrPage
from pipeline.ocr.orientation import ROTATIONS, box_on_page, turned
from pipeline.types import PipelineError

# Page segmentation 3: automatic layout without OSD (orientation is settled before), so columns
# come out one after the other, in reading order.
_LAYOUT = "--psm 3"
# Orientation and script detection only; it needs a page with a few dozen characters. It takes
# a fraction of the layout pass's time, and at most this share of the page's.
_OSD = "--psm 0"
_OSD_SHARE = 0.25


class TesseractEngine(OcrEngine):
    name = "tesseract"

    def __init__(self) -> None:
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    @classmethod
    def missing(cls) -> str | None:
        if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
            return "the tesseract program is not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-osd)"
        return None

    def read(self, image: np.ndarray, *, timeout_seconds: float) -> OcrPage:
        """Both passes share ``timeout_seconds``, so each tesseract process is ended (by
        pytesseract) before the helper's own limit kills the helper and would orphan it."""
        deadline = time.monotonic() + timeout_seconds
        picture = Image.fromarray(image)
        rotation = _rotation(picture, timeout_seconds * _OSD_SHARE)
        upright = Image.fromarray(turned(image, rotation)) if rotation else picture
        try:
            words = pytesseract.image_to_data(
                upright, config=_LAYOUT, output_type=pytesseract.Output.DICT,
                timeout=max(deadline - time.monotonic(), 1),
            )
        except RuntimeError as error:  # pytesseract's timeout
            raise page_timeout(timeout_seconds) from error
        except pytesseract.TesseractError as error:
            raise PipelineError("OCR_FAILED", f"tesseract failed: {error.message}"[:300]) from error
        width, height = upright.size
        lines = [
            OcrLine(text, box_on_page(box, rotation), confidence)
            for text, box, confidence in _lines(words, width, height)
        ]
        return OcrPage(self.name, lines, rotation)


def _rotation(picture: Image.Image, timeout_seconds: float) -> int:
    """Degrees clockwise that stand the page upright; 0 when OSD finds too little text to tell."""
    try:
        found = pytesseract.image_to_osd(
            picture, config=_OSD, output_type=pytesseract.Output.DICT, timeout=timeout_seconds
        )
    except (pytesseract.TesseractError, RuntimeError):
        return 0
    rotation = int(found.get("rotate", 0)) % 360
    return rotation if rotation in ROTATIONS else 0


def _lines(words: dict[str, list], width: int, height: int) -> Iterator[tuple[str, tuple[float, ...], float]]:
    """Join tesseract's words into lines: text, box as page fractions, mean confidence."""
    rows = [
        index for index, text in enumerate(words["text"])
        if text.strip() and words["level"][index] == 5
    ]

    def line_of(index: int) -> tuple[int, int, int]:
        return words["block_num"][index], words["par_num"][index], words["line_num"][index]

    for _, members in groupby(rows, key=line_of):
        indexes = list(members)
        left = min(words["left"][i] for i in indexes)
        top = min(words["top"][i] for i in indexes)
        right = max(words["left"][i] + words["width"][i] for i in indexes)
        bottom = max(words["top"][i] + words["height"][i] for i in indexes)
        confidence = sum(max(float(words["conf"][i]), 0.0) for i in indexes) / len(indexes) / 100
        text = " ".join(words["text"][i].strip() for i in indexes)
        yield text, (left / width, top / height, right / width, bottom / height), round(confidence, 3)
