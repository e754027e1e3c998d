"""Which extractor reads a source: extractors register themselves and the best score wins.

This keeps the dispatch open for extension (an OCR or audio extractor is one new module and one
``register`` call) instead of an if-chain over MIME types that every new format would edit.
"""
from __future__ import annotations

import codecs
import mimetypes
from functools import partial

from pipeline.extractors.base import Extractor
from pipeline.extractors.limits import ExtractLimits
from pipeline.sandbox import decoder
from pipeline.types import Extraction, PipelineError

GENERIC_MIME = "application/octet-stream"
_GENERIC = {"", GENERIC_MIME, "binary/octet-stream", "application/unknown", "application/x-download"}

# The PDF header may follow some junk; PDF readers accept it anywhere in the first kilobyte.
_PDF_MAGIC = b"%PDF-"
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body")
_SNIFF_BYTES = 1024

_extractors: list[Extractor] = []
DEFAULT_LIMITS = ExtractLimits()


def register(extractor: Extractor) -> Extractor:
    """Make ``extractor`` available to ``pick``; registering the same name twice replaces it."""
    _extractors[:] = [known for known in _extractors if known.name != extractor.name]
    _extractors.append(extractor)
    return extractor


def pick(mime: str, filename: str) -> Extractor:
    """The registered extractor with the highest positive score (the earliest one on a tie)."""
    best: Extractor | None = None
    best_score = 0
    for extractor in _extractors:
        score = extractor.score(mime, filename)
        if score > best_score:
            best, best_score = extractor, score
    if best is None:
        raise PipelineError("UNSUPPORTED_TYPE", f"no extractor reads {mime or 'unknown type'} ({filename[:200]})")
    return best


def extract(
    data: bytes,
    *,
    filename: str,
    mime: str | None = None,
    url: str | None = None,
    declared_charset: str | None = None,
    limits: ExtractLimits = DEFAULT_LIMITS,
) -> Extraction:
    """Extract one source within ``limits``, sniffing its type when ``mime`` is missing or generic.

    A ``charset`` parameter on ``mime`` (``text/html; charset=utf-8``) serves as the declared
    charset when none is passed separately. A sandboxed extractor runs in this process's decoder
    helper under the memory and time caps (``pipeline.sandbox``): the extractor and its arguments
    travel there pickled, the extraction comes back the same way.
    """
    if not data:
        raise PipelineError("EMPTY_FILE", f"{filename[:200] or 'source'} is empty")
    essence, charset = _parse_mime(mime)
    if essence in _GENERIC:
        essence = sniff(data, filename)
    extractor = pick(essence, filename)
    task = partial(
        extractor.extract,
        data, filename=filename, mime=essence, url=url, declared_charset=declared_charset or charset, limits=limits,
    )
    if not extractor.sandboxed:
        return task()
    return decoder().run(task, memory_mb=limits.memory_mb, timeout_seconds=limits.timeout_seconds)


def sniff(data: bytes, filename: str) -> str:
    """Guess a MIME type from magic bytes, then from the file name, then "does it read as text".

    Bytes come first because file names and URLs often carry no or a wrong extension; the text
    test last lets extension-less files such as ``README`` through while binary stays generic.
    """
    head = data[:_SNIFF_BYTES]
    if _PDF_MAGIC in head:
        return "application/pdf"
    if any(marker in head.lower() for marker in _HTML_MARKERS):
        return "text/html"
    guessed, _ = mimetypes.guess_type(filename, strict=False)
    if guessed:
        return guessed
    return "text/plain" if _looks_like_text(head) else GENERIC_MIME


def _looks_like_text(head: bytes) -> bool:
    """No NUL byte and valid UTF-8 (a character cut at the end of the window is allowed)."""
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _parse_mime(mime: str | None) -> tuple[str, str | None]:
    """Split ``type/subtype; charset=x`` into its lower-case essence and the charset, if any."""
    if not mime:
        return "", None
    essence, *params = mime.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return essence.strip().lower(), charset
