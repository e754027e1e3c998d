"""The contract every extractor implements, and the span splitter they share."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import PurePosixPath

from pipeline.extractors.limits import ExtractLimits
from pipeline.types import Extraction

# Large enough to keep a section or a few paragraphs whole, small enough that a citation's locator
# still points somewhere a reader can find; the chunker cuts finer later.
SEGMENT_CHARS = 4000


class Extractor(ABC):
    """Turns the bytes of one source of one kind (PDF, web page, plain text, ...) into segments.

    The key words MUST, MUST NOT, SHOULD and MAY are to be read as in RFC 2119.

    - ``name`` MUST be a short, stable identifier (it appears in logs and job records).
    - ``score(mime, filename)`` MUST return 0 when the extractor cannot read that kind of source
      and a positive integer otherwise; the registry picks the highest score, so an extractor
      SHOULD return 10 for a MIME type it was written for and MAY return a lower score for a
      looser match (a file extension, a generic ``text/*`` type). It MUST NOT look at the bytes and
      MUST be cheap: it runs for every extractor on every source.
    - ``extract(...)`` MUST return an ``Extraction`` whose ``mime`` names what was read and whose
      segments each carry non-empty text and a locator a citation can point at (see
      ``pipeline.types.Segment``). It MUST be a pure function of its arguments: no network, no
      files, no global state, because extract workers run on other machines and may retry.
    - An expected failure (encrypted, corrupt, undecodable input) MUST raise
      ``PipelineError`` with a stable UPPER_SNAKE code; an exception from a third-party library
      MUST NOT escape, because the job records the code and shows the message to a user.
    - An extractor MUST release native resources (file handles, PDFium objects) before returning,
      also on error, because one worker process extracts hundreds of sources in a row.
    - Content that needs another pass (for example a PDF page without a text layer) MUST be
      reported (``pages_needing_ocr``) rather than silently indexed as empty, with the document's
      other pages, if any, uncleaned (``pages``, ``pipeline.extractors.clean_pages.DocumentPages``), so
      that the OCR pass cleans the whole document once it has read those pages.
    - ``extract`` MUST keep to ``limits`` (``pipeline.extractors.limits``): it SHOULD check a
      declared size (a page count) before decoding what it sizes, and MUST count every character it
      keeps through one ``CharBudget``, reporting a page it cut in ``truncated_pages``.
    - ``sandboxed`` MUST stay true for a decoder of untrusted formats (native code, parsers whose
      memory grows with nesting or compression): the registry then runs it in the worker's decoder
      helper process with the memory and time caps (``pipeline.sandbox``). Only an extractor whose
      memory is a small multiple of its input and that the budget bounds before decoding MAY set
      it false.
    - A sandboxed extractor MUST pickle by reference, because the registry sends the extractor
      itself to the helper with each source: its class defined at module level, its instance
      holding plain data only. It SHOULD NOT load a large model into the helper: memory the
      helper keeps after a source counts towards replacing it (``RESTART_SHARE``).
    - ``url`` is the address a web page was fetched from, ``None`` for an attachment; an
      extractor SHOULD put it into locators where it helps a reader open the evidence.
      ``declared_charset`` is the charset the server or the caller declared; a text-based
      extractor SHOULD treat it as a hint only (see ``pipeline.charset``).
    """

    name: str
    sandboxed: bool = True

    @abstractmethod
    def score(self, mime: str, filename: str) -> int:
        """How well this extractor fits a source: 0 = cannot handle, higher wins."""

    @abstractmethod
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
        """Read ``data`` into segments within ``limits``; raise ``PipelineError`` on expected failures."""


def extension(filename: str) -> str:
    """The lower-case extension of a file name or URL path, without the dot ('' when none)."""
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower().lstrip(".")


def kind_score(mime_fits: bool, filename: str, extensions: Mapping[str, str]) -> int:
    """The score of an extractor for a family of types: 10 when the MIME type is one of them, 5
    when only the file name's extension is (a generic or missing type), else 0."""
    if mime_fits:
        return 10
    return 5 if extension(filename) in extensions else 0


def split_spans(text: str, limit: int = SEGMENT_CHARS) -> list[tuple[int, int]]:
    """Cut ``text`` into ``(start, end)`` spans of at most ``limit`` characters.

    Each cut falls at the last paragraph break in the second half of the window, else the last
    line break there, else the last space there, else exactly at the limit (a minified line has no
    better place); the half-window floor keeps a stray early break from producing a tiny span. Spans keep
    their offsets into ``text`` so that plain-text locators stay exact; whitespace between spans
    and whitespace-only spans are dropped.
    """
    spans: list[tuple[int, int]] = []
    start, length = 0, len(text)
    while start < length:
        while start < length and text[start].isspace():
            start += 1
        if start == length:
            break
        end = min(start + limit, length)
        if end < length:
            window = text[start:end]
            for separator in ("\n\n", "\n", " "):
                cut = window.rfind(separator)
                if cut >= limit // 2:
                    end = start + cut
                    break
        stripped_end = end
        while stripped_end > start and text[stripped_end - 1].isspace():
            stripped_end -= 1
        spans.append((start, stripped_end))
        start = end
    return spans
