"""Page images for OCR: a frame of an image file or a rendered PDF page, grayscale, within a pixel cap.

Both decode untrusted bytes, so they run in the decoder helper (``pipeline.sandbox``) under its
memory and time limits; the pixel cap is checked from the header or the page size before any
pixel is decoded, which is what stops a decompression bomb (a 40-byte-per-row PNG can declare
100,000 x 100,000 pixels) before it costs memory.
"""
from __future__ import annotations

import io
import math
import warnings
from contextlib import closing

import numpy as np
import pypdfium2 as pdfium
from PIL import Image, ImageOps

from pipeline.pdfium_lock import PDFIUM_LOCK
from pipeline.types import PipelineError

POINTS_PER_INCH = 72


def page_image(data: bytes, mime: str, page: int, *, dpi: int, max_pixels: int) -> np.ndarray:
    """Page ``page`` (1-based) of a PDF or frame ``page`` of an image file, as grayscale pixels."""
    if mime == "application/pdf":  # what the PDF extractor names every PDF it reads
        return pdf_page_image(data, page, dpi=dpi, max_pixels=max_pixels)
    return image_frame(data, page, max_pixels=max_pixels)


def pdf_page_image(data: bytes, page: int, *, dpi: int, max_pixels: int) -> np.ndarray:
    """The page as the viewer shows it (its /Rotate applied) at ``dpi``, or at the resolution that
    keeps it within ``max_pixels`` when the page is too large for that (a poster, a plan)."""
    with PDFIUM_LOCK, closing(pdfium.PdfDocument(data)) as document, closing(document[page - 1]) as pdf_page:
        width, height = pdf_page.get_size()
        scale = dpi / POINTS_PER_INCH
        if width * height * scale * scale > max_pixels:
            scale = math.sqrt(max_pixels / (width * height))
        bitmap = pdf_page.render(scale=scale, grayscale=True)
        pixels = np.array(bitmap.to_numpy(), dtype=np.uint8)
    return pixels.reshape(pixels.shape[0], pixels.shape[1])


def image_frame(data: bytes, frame: int, *, max_pixels: int) -> np.ndarray:
    """Frame ``frame`` (1-based: a multi-page TIFF's pages) of an image file, turned as its EXIF
    orientation says (a phone photo of a page is stored sideways); refused above ``max_pixels``."""
    with _opened(data, max_pixels) as picture:
        picture.seek(frame - 1)
        pixels = picture.width * picture.height
        if pixels > max_pixels:
            raise too_large(picture.width, picture.height, max_pixels)
        try:
            upright = ImageOps.exif_transpose(picture)
            return np.asarray(upright.convert("L"), dtype=np.uint8)
        except (OSError, ValueError, SyntaxError) as error:
            raise PipelineError("IMAGE_CORRUPT", f"the image could not be decoded ({error})") from error


def frame_count(data: bytes, *, max_pixels: int) -> int:
    """How many frames (pages) an image file holds, each checked against ``max_pixels`` from its header."""
    with _opened(data, max_pixels) as picture:
        count = getattr(picture, "n_frames", 1)
        for index in range(count):
            picture.seek(index)
            if picture.width * picture.height > max_pixels:
                raise too_large(picture.width, picture.height, max_pixels)
        return count


def too_large(width: int, height: int, max_pixels: int) -> PipelineError:
    return PipelineError(
        "IMAGE_TOO_LARGE",
        f"The image is {width:,} x {height:,} pixels; at most {max_pixels:,} pixels are read "
        "(raise GNOSI_OCR_MAX_PIXELS to read it).",
    )


def _opened(data: bytes, max_pixels: int) -> Image.Image:
    """The image's header, read without decoding pixels. Pillow refuses a header declaring far
    more pixels than its own limit before our check can see the size: that is the same refusal."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own cap decides
            return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as error:
        raise PipelineError(
            "IMAGE_TOO_LARGE",
            f"The image declares more than {max_pixels:,} pixels (raise GNOSI_OCR_MAX_PIXELS to read it): {error}",
        ) from error
    except (OSError, ValueError, SyntaxError) as error:  # UnidentifiedImageError is an OSError
        raise PipelineError("IMAGE_CORRUPT", f"the file is not a readable image ({error})") from error
