"""The OCR pass of the extract step: read the pages an extractor found no text on.

Each page is rendered (a PDF page) or decoded (an image frame) in the decoder helper under the
extraction limits, then read by the configured engine in the OCR helper, a second helper process
of the same kind (``pipeline.sandbox``) that keeps the engine loaded between pages and is killed
when a page runs past ``page_timeout_seconds``. Pages go one at a time, so ``before_page`` can
report which page is being read and stop the pass (a cancelled job) between pages.

A page that cannot be read (too large, corrupt, timed out) is listed with its reason and the
other pages still count; a source none of whose pages could be read fails with the first reason.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from pipeline.extractors.limits import ExtractLimits
from pipeline.ocr.engines import engine, ocr_ready, page_timeout
from pipeline.ocr.lines import OcrPage
from pipeline.extractors.clean_pages import DocumentPages
from pipeline.ocr.locators import with_read_pages
from pipeline.ocr.page_images import page_image
from pipeline.sandbox import DecoderProcess, decoder
from pipeline.sandbox.outcomes import named_for
from pipeline.types import Extraction, PipelineError

# The engine stays loaded in the helper (easyocr's start costs seconds), so the helper is not
# replaced for the memory it keeps; it is replaced after this many pages, or when a page met the
# memory limit, ran out of time or crashed.
PAGES_PER_HELPER = 200
_OCR_HELPER = DecoderProcess(max_requests=PAGES_PER_HELPER, restart_share=float("inf"))
# The helper's own limit leaves the engine's page timeout room to fire first.
_HELPER_GRACE_SECONDS = 5

log = logging.getLogger(__name__)

BeforePage = Callable[[int, int, int], None]  # (page number, its position from 1, pages to read)


def read_page(engine_name: str, image: np.ndarray, timeout_seconds: float) -> OcrPage:
    """What runs in the OCR helper: the page's lines by this process's instance of the engine."""
    return engine(engine_name).read(image, timeout_seconds=timeout_seconds)


def ocr_helper() -> DecoderProcess:
    """This process's OCR helper (a benchmark reads its CPU clock and closes it)."""
    return _OCR_HELPER


def read_missing_pages(
    data: bytes, extraction: Extraction, limits: ExtractLimits, *, before_page: BeforePage | None = None
) -> Extraction:
    """``extraction`` with the text of its pages that need OCR, when OCR is enabled and can run.

    Pages left unread stay in ``pages_needing_ocr``, with their reasons in ``ocr_errors``. The
    pages read join the extraction's other pages (``Extraction.pages``) and the document is
    cleaned again as one.
    """
    settings = limits.ocr
    pages = extraction.pages_needing_ocr
    if not pages or not ocr_ready(settings):
        return replace(extraction, pages=None)
    if len(pages) > settings.max_pages:
        raise PipelineError(
            "OCR_TOO_MANY_PAGES",
            f"{len(pages):,} pages need OCR; at most {settings.max_pages:,} are read per source "
            "(raise GNOSI_OCR_MAX_PAGES to read them).",
        )
    read: dict[int, OcrPage] = {}
    unread: list[int] = []
    errors: list[dict[str, object]] = []
    for position, number in enumerate(pages, start=1):
        if before_page is not None:
            before_page(number, position, len(pages))
        try:
            read[number] = _read(data, extraction.mime, number, limits)
        except (PipelineError, RuntimeError) as error:
            failure = error if isinstance(error, PipelineError) else _engine_bug(number, error)
            unread.append(number)
            errors.append({"page": number, "code": failure.code, "message": failure.message})
    document = with_read_pages(extraction.pages or DocumentPages(), read)
    return replace(extraction, segments=document.segments(), pages_needing_ocr=unread, ocr_errors=errors, pages=None)


def _engine_bug(number: int, error: RuntimeError) -> PipelineError:
    """A bug in a helper (its traceback in ``error``) costs its page, not the pages already read."""
    log.error("OCR of page %d failed: %s", number, error)
    last_line = str(error).strip().splitlines()[-1]  # the exception, after the helper's traceback
    return PipelineError("OCR_FAILED", f"the OCR engine failed: {last_line}")


def _read(data: bytes, mime: str, number: int, limits: ExtractLimits) -> OcrPage:
    settings = limits.ocr
    image = decoder().run(
        partial(page_image, data, mime, number, dpi=settings.dpi, max_pixels=settings.max_pixels),
        memory_mb=limits.memory_mb,
        timeout_seconds=limits.timeout_seconds,
    )
    try:
        return _OCR_HELPER.run(
            partial(read_page, settings.engine, image, settings.page_timeout_seconds),
            memory_mb=settings.memory_mb,
            timeout_seconds=settings.page_timeout_seconds + _HELPER_GRACE_SECONDS,
        )
    except PipelineError as error:
        raise ocr_error(error, limits) from None


def ocr_error(error: PipelineError, limits: ExtractLimits) -> PipelineError:
    """How the OCR helper's request ended, named for OCR and by the settings that move its limits
    (the helper's own words are about decoding documents)."""
    return named_for(
        error,
        timeout=page_timeout(limits.ocr.page_timeout_seconds),
        memory=PipelineError(
            "OCR_MEMORY_LIMIT", f"OCR of the page needed more than {limits.ocr.memory_mb:,} MB (raise GNOSI_OCR_MEMORY_MB)."
        ),
        crashed=("OCR_CRASHED", "The OCR engine crashed on this page"),
    )
