"""Extractions kept by content: the key a source's text units are cached under, and their bytes.

Extraction is the expensive step (PDFium now; OCR and transcription cost seconds per page or
minute), chunking and embedding are cheap. Keeping each extraction lets a change of the chunking or
embedding settings, or a retry after a failed index step, chunk again without extracting again.

The key covers everything the extractor's output depends on besides the bytes: the extractors'
version (``EXTRACTORS_VERSION``, bumped with any change to what they emit, plus the versions of
the decoding libraries), the caps (a lower page cap truncates) and OCR settings, whether the OCR
engine can run (a scan extracted before tesseract was installed is read again after), which speech
model transcribes (its packages' versions, or a model folder's file), and what the
extractor is told about the source (file name, MIME type, declared charset, and the URL that web
locators carry).
Two records that attach the same file share one entry.
"""
from __future__ import annotations

import hashlib
import json
import mimetypes
import zlib
from dataclasses import astuple, dataclass
from functools import cache
from importlib.metadata import version

from pipeline.extractors.limits import ExtractLimits
from pipeline.ocr.engines import ocr_ready
from pipeline.speech.models import identity
from pipeline.speech.transcribing import speech_ready
from pipeline.types import Extraction, PipelineError, Segment

# Bump when an extractor changes what it emits for the same bytes (text, locators, metadata).
EXTRACTORS_VERSION = "7"  # 2: PDFs lose running headers/footers, mark reference lists; 3: OCR; 4: line boxes, tables; 5: OCR pages cleaned and labelled too; 6: a partly scanned PDF cleaned as one document, audio and video transcribed; 7: WebVTT subtitles read as timed cues
_LIBRARIES = ("pypdfium2", "pdfplumber", "trafilatura", "lxml", "pillow", "av", "faster-whisper", "ctranslate2")
KEY_LENGTH = 64
# Level 1: text compresses about 3x at it, ten times faster than the default level.
_COMPRESSION = 1


@dataclass(frozen=True)
class ExtractInputs:
    """What an extractor is told about a source besides its bytes."""

    filename: str
    mime: str | None
    url: str | None = None
    declared_charset: str | None = None


def attachment_inputs(filename: str) -> ExtractInputs:
    """What an extractor is told about an attachment: its name, and the MIME type that implies."""
    return ExtractInputs(filename, mimetypes.guess_type(filename)[0])


@cache
def _library_versions() -> tuple[str, ...]:
    return tuple(f"{name} {version(name)}" for name in _LIBRARIES)


def extraction_key(content_hash: str, inputs: ExtractInputs, limits: ExtractLimits) -> str:
    """The cache key of the extraction of bytes hashing to ``content_hash`` read with ``inputs``."""
    recipe = [
        content_hash, EXTRACTORS_VERSION, *_library_versions(), *astuple(inputs), *astuple(limits),
        ocr_ready(limits.ocr), identity(limits.speech.model) if speech_ready(limits.speech) else None,
    ]
    return hashlib.sha256(json.dumps(recipe).encode()).hexdigest()


def encode(extraction: Extraction) -> bytes:
    """An extraction as compressed JSON (segments as ``[text, locator]`` pairs)."""
    document = {
        "mime": extraction.mime,
        "title": extraction.title,
        "page_count": extraction.page_count,
        "pages_needing_ocr": extraction.pages_needing_ocr,
        "truncated_pages": extraction.truncated_pages,
        "ocr_errors": extraction.ocr_errors,
        "duration_seconds": extraction.duration_seconds,
        "transcribed_by": extraction.transcribed_by,
        "segments": [[segment.text, segment.locator] for segment in extraction.segments],
    }
    return zlib.compress(json.dumps(document, ensure_ascii=False).encode(), _COMPRESSION)


def decode(data: bytes, *, max_bytes: int) -> Extraction:
    """The extraction ``encode`` wrote; ``EXTRACTION_INVALID`` for anything else, and for one that
    inflates past ``max_bytes`` (a cache entry is trusted no more than any upload)."""
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(data, max_bytes)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ValueError("cut, or larger than the cap")
        document = json.loads(text)
        return Extraction(
            mime=document["mime"],
            segments=[Segment(text, locator) for text, locator in document["segments"]],
            title=document["title"],
            page_count=document["page_count"],
            pages_needing_ocr=list(document["pages_needing_ocr"]),
            truncated_pages=list(document["truncated_pages"]),
            ocr_errors=list(document.get("ocr_errors", [])),
            duration_seconds=document.get("duration_seconds"),
            transcribed_by=document.get("transcribed_by"),
        )
    except (zlib.error, ValueError, KeyError, TypeError) as err:
        raise PipelineError("EXTRACTION_INVALID", f"A cached extraction could not be read: {err}") from None
