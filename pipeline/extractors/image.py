"""Image files (PNG, JPEG, TIFF, WebP): every frame is a page with no text layer, for OCR to read.

The extractor itself only reads headers: how many frames, and that none is above the pixel cap,
so a decompression bomb is refused before the OCR pass decodes a pixel of it.
"""
from __future__ import annotations

from pipeline.extractors.base import Extractor, extension, kind_score
from pipeline.extractors.limits import ExtractLimits
from pipeline.ocr.page_images import frame_count
from pipeline.types import Extraction, PipelineError

_MIME_OF_EXTENSION = {
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "tif": "image/tiff", "tiff": "image/tiff",
    "webp": "image/webp",
}
IMAGE_MIMES = frozenset(_MIME_OF_EXTENSION.values())


class ImageExtractor(Extractor):
    name = "image"

    def score(self, mime: str, filename: str) -> int:
        return kind_score(mime in IMAGE_MIMES, filename, _MIME_OF_EXTENSION)

    def extract(
        self,
        data: bytes,
        *,
        filename: str,
        mime: str,
        url: str | None = None,
        declared_charset: str | None = None,
        limits: ExtractLimits,
    ) -> Extraction:
        try:
            pages = frame_count(data, max_pixels=limits.ocr.max_pixels, max_frames=limits.max_pages)
        except PipelineError as error:
            raise PipelineError(error.code, f"{filename[:200]}: {error.message}") from None
        return Extraction(
            mime=mime if mime in IMAGE_MIMES else _MIME_OF_EXTENSION[extension(filename)],
            segments=[],
            page_count=pages,
            pages_needing_ocr=list(range(1, pages + 1)),
        )
