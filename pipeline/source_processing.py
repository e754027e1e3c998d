"""Turn one source into chunks and vectors: what an extract worker does for one message.

Stateless on purpose: it needs the source's bytes (a vault file or a URL) and nothing of the
database, so extract workers scale out on machines that do not hold ``notebooks.sqlite3``.
"""
from __future__ import annotations

import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from pipeline.chunker import chunk_segments
from pipeline.embedder import Embedder
from pipeline.evidence_pack import Evidence, evidence_of
from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits, truncation_note
from pipeline.fetch import FetchPolicy, fetch
from pipeline.fingerprint import bytes_sha256
from pipeline.types import Extraction, PipelineError, SourceRef


@dataclass
class SourceResult:
    """The outcome of processing one source. Its message form (a Celery payload) leaves the
    evidence out: that travels as a pack file (pipeline.evidence_pack).

    ``error_code``/``error`` say why a source failed or, on an extracted one, what was left out
    of it (``EXTRACT_PAGE_TRUNCATED``), so the reader sees that some text is missing.
    """

    source_id: str
    status: str  # "extracted" | "not_modified" | "error" | "cancelled"
    error_code: str | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    evidence: Evidence | None = None

    def to_message(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "status": self.status,
            "error_code": self.error_code,
            "error": self.error,
            "meta": self.meta,
        }

    @classmethod
    def from_message(cls, data: dict[str, Any], evidence: Evidence | None = None) -> "SourceResult":
        return cls(
            data["source_id"], data["status"], data.get("error_code"), data.get("error"),
            data.get("meta") or {}, evidence,
        )


AttachmentReader = Callable[[], tuple[bytes, str]]


def _meta(extraction: Extraction, content_hash: str, **extra: Any) -> dict[str, Any]:
    return {
        "mime": extraction.mime,
        "title": (extraction.title or "")[:500] or None,
        "page_count": extraction.page_count,
        "pages_needing_ocr": extraction.pages_needing_ocr,
        "content_hash": content_hash,
        **extra,
    }


def process_source(
    source_id: str,
    ref: SourceRef,
    *,
    read_attachment: AttachmentReader,
    policy: FetchPolicy,
    embedder: Embedder,
    limits: ExtractLimits,
    validators: dict[str, str] | None = None,
) -> SourceResult:
    """Read or fetch, extract, chunk and embed one source; expected failures become results.

    ``read_attachment`` returns the attachment's bytes and file name; the worker passes a reader
    that asks the API instance, so this code never needs the vault or the database. ``limits``
    bound the extraction; a source past one of them ends with that cap's error, and pages cut at
    the per-page cap leave a note on the otherwise available source.
    """
    validators = validators or {}
    try:
        if ref.kind == "attachment":
            data, filename = read_attachment()
            content_hash = bytes_sha256(data)
            extraction = extract(data, filename=filename, mime=mimetypes.guess_type(filename)[0], limits=limits)
            meta = _meta(extraction, content_hash)
        else:
            fetched = fetch(
                ref.value,
                policy,
                etag=validators.get("etag"),
                last_modified=validators.get("last_modified"),
            )
            web = {"final_url": fetched.url, "etag": fetched.etag, "last_modified": fetched.last_modified}
            if fetched.not_modified or fetched.content_hash == validators.get("content_hash"):
                return SourceResult(source_id, "not_modified", meta=web)
            extraction = extract(
                fetched.content,
                filename=PurePosixPath(urlsplit(fetched.url).path).name or "index.html",
                mime=fetched.content_type,
                url=fetched.url,
                declared_charset=fetched.charset,
                limits=limits,
            )
            content_hash = fetched.content_hash or bytes_sha256(fetched.content)
            meta = _meta(extraction, content_hash, **web)
    except PipelineError as err:
        return SourceResult(source_id, "error", err.code, err.message)

    if not extraction.segments:
        if extraction.pages_needing_ocr:
            pages = len(extraction.pages_needing_ocr)
            return SourceResult(
                source_id, "error", "NEEDS_OCR",
                f"{pages} page(s) have no text layer and OCR is not available yet.", meta,
            )
        return SourceResult(source_id, "error", "NO_TEXT", "No text could be extracted.", meta)

    # Chunk ids hash the content *and* the source's identity: the same file attached to two
    # records must not produce colliding ids inside one revision.
    identity = f"{content_hash}\n{ref.resource_id}\n{ref.field}\n{ref.value}"
    chunks = chunk_segments(extraction.segments, source_fingerprint=bytes_sha256(identity.encode()))
    vectors = embedder.embed([chunk.text for chunk in chunks])
    rows = [
        {"chunk_id": chunk.chunk_id, "ordinal": chunk.ordinal, "text": chunk.text, "locator": chunk.locator}
        for chunk in chunks
    ]
    note_code, note = truncation_note(extraction.truncated_pages, limits) or (None, None)
    return SourceResult(
        source_id, "extracted", note_code, note, meta=meta, evidence=evidence_of(embedder.name, rows, vectors)
    )
