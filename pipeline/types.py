"""Small typed records that flow through the ingestion chain.

They are plain data because they cross process boundaries: a ``SourceRef`` travels in Celery
messages as JSON (``to_dict``/``from_dict``), an ``Extraction`` comes back from the decoder helper
pickled and is cached as compressed JSON (``pipeline.extraction_cache``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pipeline.extractors.clean_pages import DocumentPages
    from pipeline.speech.audio import SpeechAudio

SourceKind = Literal["attachment", "url", "linked"]
# Sources whose bytes are a file the instance holds: a vault attachment, or a document of a linked
# drive folder (value ``<document id>/<file name>``, its bytes the blob the last sync downloaded).
FILE_KINDS = ("attachment", "linked")


@dataclass(frozen=True)
class SourceRef:
    """One evidence value of a record (a vault-relative attachment path or an http(s) URL), or a
    linked folder's document."""

    resource_id: str
    field: str
    kind: SourceKind
    value: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SourceRef":
        return cls(**data)


@dataclass(frozen=True)
class Segment:
    """A run of text with the locator a citation will point at.

    Locators: ``{"page": 1, "page_label": "i"}`` for PDFs (page is 1-based and physical),
    ``{"start": 1.5, "end": 4.0}`` for media (seconds), ``{"url": ..., "fragment": ...}`` for web
    pages, ``{"offset": n}`` for plain text (character offset of the segment in the document).
    """

    text: str
    locator: dict[str, Any]


@dataclass
class Extraction:
    """What an extractor found in one source."""

    mime: str
    segments: list[Segment]
    title: str | None = None
    page_count: int | None = None
    pages_needing_ocr: list[int] = field(default_factory=list)
    # Pages cut at the per-page character cap (pipeline.extractors.limits), reported to the reader.
    truncated_pages: list[int] = field(default_factory=list)
    # Pages OCR could not read: {"page", "code", "message"} each (pipeline.ocr.reading).
    ocr_errors: list[dict[str, Any]] = field(default_factory=list)
    # A paginated document's pages before cleaning, kept while some of them wait for OCR: the OCR
    # pass adds the pages it reads and cleans the whole document at once (running lines, printed
    # labels and reference lists are told across pages). Not kept past the OCR pass.
    pages: DocumentPages | None = None
    # How long an audio or video source plays (None for other sources), and the speech model that
    # transcribed it (None: not transcribed; with no segments, then, nobody speaks in it).
    duration_seconds: float | None = None
    transcribed_by: str | None = None
    # An audio or video source's decoded sound and where it has speech, kept for the
    # transcription pass (pipeline.speech.transcribing); not kept past it.
    speech: SpeechAudio | None = None


class PipelineError(Exception):
    """An expected failure with a stable machine-readable code and a bounded human message."""

    max_message = 500

    def __init__(self, code: str, message: str) -> None:
        message = message[: self.max_message]
        super().__init__(code, message)  # both in args, so the error survives pickling
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
