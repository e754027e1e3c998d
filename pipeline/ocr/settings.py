"""How OCR runs: which engine, at what resolution, within which caps (README: GNOSI_OCR_*)."""
from __future__ import annotations

from dataclasses import dataclass

OFF = "off"
# GNOSI_OCR_ENGINE's values, the default first.
ENGINE_CHOICES = ("tesseract", "easyocr", OFF)


@dataclass(frozen=True)
class OcrSettings:
    """Per-source OCR caps; they are part of the extraction cache key, so changing one reads again.

    tesseract is the default because it read the corpus more accurately and several times faster
    than easyocr on these CPUs and installs in seconds (docs/decisions/0014 has the measurement).
    300 dpi is what both engines are tuned for. 40 M pixels holds an A4 page at 600 dpi (35 M)
    and a 12-megapixel phone photo three times over; a page rendered above it is rendered at the
    resolution that fits instead, and an image file above it is refused. 500 pages is a thick
    scanned book (~45 minutes at tesseract's ~5 s per page here). 120 s per page is over ten
    times what either engine takes on a dense page; memory is the helper's address-space growth,
    and easyocr's torch alone maps ~4 GB of it (its resident set is ~1.1 GB).
    """

    engine: str = ENGINE_CHOICES[0]
    dpi: int = 300
    max_pixels: int = 40_000_000
    max_pages: int = 500
    page_timeout_seconds: int = 120
    memory_mb: int = 8_192

    @property
    def enabled(self) -> bool:
        return self.engine != OFF
