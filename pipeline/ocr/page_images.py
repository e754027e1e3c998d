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
from collections.abc import Iterator
from contextlib import closing, contextmanager

import numpy as np
import pypdfium2 as pdfium
from PIL import Image, ImageOps

from pipeline.pdfium_lock import PDFIUM_LOCK
from pipeline.types import PipelineError

POINTS_PER_INCH = 72
# The formats image sources may be: Pillow would otherwise open any of the ~40 it knows by their
# bytes, whatever the file's name, EPS among them, which it decodes by running Ghostscript.
IMAGE_FORMATS = ("PNG", "JPEG", "TIFF", "WEBP")


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
        with _decoding():
            picture.seek(frame - 1)
        if picture.width * picture.height > max_pixels:
            raise too_large(picture.width, picture.height, max_pixels)
        with _decoding():
            return np.asarray(ImageOps.exif_transpose(picture).convert("L"), dtype=np.uint8)


def frame_count(data: bytes, *, max_pixels: int, max_frames: int) -> int:
    """How many frames (pages) an image file holds, each checked against ``max_pixels`` from its
    header; refused above ``max_frames`` before any frame is looked at."""
    with _opened(data, max_pixels) as picture:
        with _decoding():
            count = getattr(picture, "n_frames", 1)
        if count > max_frames:
            raise PipelineError(
                "EXTRACT_TOO_MANY_PAGES",
                f"The image has {count:,} frames; at most {max_frames:,} are read (raise GNOSI_EXTRACT_MAX_PAGES).",
            )
        for index in range(count):
            with _decoding():
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


@contextmanager
def _decoding() -> Iterator[None]:
    """Any failure of Pillow's decoders on damaged bytes is the file's, named ``IMAGE_CORRUPT``:
    a mutated TIFF raises SyntaxError, TypeError or KeyError, a missing frame EOFError."""
    try:
        yield
    except PipelineError:
        raise
    except Exception as error:  # noqa: BLE001 (a decoder of untrusted bytes fails in many ways)
        message = f"the image could not be decoded ({type(error).__name__}: {error})"
        raise PipelineError("IMAGE_CORRUPT", message[:400]) from error


def _opened(data: bytes, max_pixels: int) -> Image.Image:
    """The image's header, read without decoding pixels. Pillow refuses a header declaring far
    more pixels than its own limit before our check can see the size: that is the same refusal."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own cap decides
            return Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except Image.DecompressionBombError as error:
        raise PipelineError(
            "IMAGE_TOO_LARGE",
            f"The image declares more than {max_pixels:,} pixels (raise GNOSI_OCR_MAX_PIXELS to read it): {error}",
        ) from error
    except Exception as error:  # noqa: BLE001 (UnidentifiedImageError, and any decoder's own failure)
        raise PipelineError("IMAGE_CORRUPT", f"the file is not a readable image ({error})"[:400]) from error
