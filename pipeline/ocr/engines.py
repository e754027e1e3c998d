"""The interface every OCR engine implements, and the registry that names them.

Engines are heavy to start (easyocr loads two neural networks, ~3 s and a few hundred MB) and
cheap to reuse, so each process keeps one instance per engine (``engine``). They run in the OCR
helper process (``pipeline.ocr.reading``), never in the worker itself: a page that runs past its
time is ended by killing that helper, which no thread inside the worker could do.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cache

import numpy as np

from pipeline.ocr.lines import OcrPage
from pipeline.ocr.settings import OcrSettings
from pipeline.types import PipelineError


class OcrEngine(ABC):
    """Reads the lines of one grayscale page image (uint8, height x width), turning it upright first.

    - ``read`` MUST return every line in reading order with its box on the page *as given* (after
      turning it back, ``pipeline.ocr.orientation.box_on_page``) and the rotation it applied.
    - ``read`` MUST use one compute thread (workers scale out with processes: two threads per
      process on two cores made easyocr seven times slower, STACK.md) and SHOULD finish within
      ``timeout_seconds``; the helper kills it when it does not.
    - An engine that cannot run here (a missing binary or package) MUST say why through
      ``missing()`` rather than fail at import, so the service starts without it.
    """

    name: str

    @classmethod
    @abstractmethod
    def missing(cls) -> str | None:
        """None when the engine can run in this process, else what to install to get it."""

    @abstractmethod
    def read(self, image: np.ndarray, *, timeout_seconds: float) -> OcrPage:
        """The lines of ``image``; raises ``PipelineError`` on an expected failure."""


def page_timeout(seconds: float) -> PipelineError:
    """The error of a page OCR did not finish in time, naming the setting that moves the limit."""
    return PipelineError(
        "OCR_TIMEOUT", f"OCR of the page took over {seconds:.0f} s (raise GNOSI_OCR_PAGE_TIMEOUT_SECONDS)."
    )


def _engines() -> dict[str, type[OcrEngine]]:
    from pipeline.ocr.easyocr_engine import EasyOcrEngine
    from pipeline.ocr.tesseract import TesseractEngine

    return {engine.name: engine for engine in (TesseractEngine, EasyOcrEngine)}


def missing(name: str) -> str | None:
    """Why engine ``name`` cannot run here (None when it can)."""
    engine_class = _engines().get(name)
    if engine_class is None:
        return f"there is no OCR engine called {name!r} (known: {', '.join(_engines())})"
    return engine_class.missing()


def ocr_ready(settings: OcrSettings) -> bool:
    """Whether pages needing OCR are read here: it is on and its engine can run."""
    return settings.enabled and missing(settings.engine) is None


@cache
def engine(name: str) -> OcrEngine:
    """This process's instance of engine ``name``, started on first use."""
    reason = missing(name)
    if reason:
        raise PipelineError("OCR_UNAVAILABLE", f"OCR engine {name} cannot run: {reason}")
    return _engines()[name]()
