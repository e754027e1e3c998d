"""What a reader is told about pages left without text: OCR off, not installed, or failed on them."""
from __future__ import annotations

from pipeline.ocr.engines import missing
from pipeline.ocr.settings import OcrSettings
from pipeline.types import Extraction

_SHOWN_PAGES = 10


def unread_reason(extraction: Extraction, settings: OcrSettings) -> tuple[str, str] | None:
    """Code and bounded message for the pages still needing OCR, or None when every page was read.

    On a source with other text this rides as a note (the source stays available); on one with no
    text at all it is the source's error.
    """
    pages = extraction.pages_needing_ocr
    if not pages:
        return None
    shown = ", ".join(str(page) for page in pages[:_SHOWN_PAGES]) + (", …" if len(pages) > _SHOWN_PAGES else "")
    if not settings.enabled:
        return (
            "NEEDS_OCR", f"{len(pages)} page(s) have no text layer and OCR is off (GNOSI_OCR_ENGINE) (pages {shown})."
        )
    reason = missing(settings.engine)
    if reason:
        return "NEEDS_OCR", f"{len(pages)} page(s) have no text layer and OCR cannot run: {reason} (pages {shown})."
    first = extraction.ocr_errors[0] if extraction.ocr_errors else {"code": "OCR_FAILED", "message": "no reason given"}
    return str(first["code"]), f"OCR could not read {len(pages)} page(s) (pages {shown}): {first['message']}"
