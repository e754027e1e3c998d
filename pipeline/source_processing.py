"""Turn one source into chunks and vectors, in the steps the extract workers run them as:
read (``read_source``), extract (``extract_read``), chunk and embed (``chunk_extraction``).

Stateless on purpose: it needs the source's bytes (a vault file or a URL) and nothing of the
database, so extract workers scale out on machines that do not hold ``notebooks.sqlite3``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from pipeline.chunker import ChunkSettings, chunk_segments
from pipeline.embedder import Embedder
from pipeline.evidence_pack import evidence_of
from pipeline.extraction_cache import ExtractInputs, attachment_inputs
from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits, truncation_note
from pipeline.extractors.subtitles import VTT_MIME
from pipeline.fetch import FetchPolicy, fetch
from pipeline.fingerprint import bytes_sha256
from pipeline.ocr.reading import BeforePage, read_missing_pages
from pipeline.ocr.unread import unread_reason
from pipeline.speech.transcribing import BeforeWindow, transcribe, unheard_reason
from pipeline.source_result import SourceResult
from pipeline.streaming.download import DownloadProgress, download
from pipeline.streaming.limits import StreamLimits
from pipeline.streaming.probe import MediaProbe, NoMedia, is_streaming_url, probe
from pipeline.types import FILE_KINDS, Extraction, PipelineError, SourceRef


log = logging.getLogger(__name__)


AttachmentReader = Callable[[], tuple[bytes, str]]


@dataclass(frozen=True)
class ReadSource:
    """A source's bytes as the extract step read them, and what it learnt on the way."""

    data: bytes
    content_hash: str
    inputs: ExtractInputs
    meta: dict[str, Any]  # the content hash and, for a web page, its final URL and validators


@dataclass(frozen=True)
class Unchanged:
    """A web page that did not change since the validators the fetch sent."""

    meta: dict[str, Any]  # its final URL and validators as this fetch found them


def read_source(
    ref: SourceRef,
    *,
    read_attachment: AttachmentReader,
    policy: FetchPolicy,
    validators: dict[str, str],
    streams: StreamLimits = StreamLimits(),
    before_download: DownloadProgress | None = None,
) -> ReadSource | Unchanged:
    """Read an attachment or fetch a URL; ``Unchanged`` when the page is the same as when
    ``validators`` were taken (ETag, Last-Modified, or the same body hash; a recording: the same
    media fingerprint). Raises ``PipelineError`` on expected failures.

    ``read_attachment`` returns the attachment's bytes and file name; the worker passes a reader
    that asks the API instance, so this code never needs the vault or the database. A recording
    on a streaming site or a link to a media file is probed first and downloaded only when new
    (``before_download`` hears how far the download has come).
    """
    if ref.kind in FILE_KINDS:
        data, filename = read_attachment()
        content_hash = bytes_sha256(data)
        inputs = attachment_inputs(filename)
        return ReadSource(data, content_hash, inputs, {"content_hash": content_hash})
    if validators.get("media_fingerprint") or is_streaming_url(ref.value):
        streamed = _read_stream(ref.value, policy, streams, validators, before_download)
        if streamed is not None:
            return streamed
    fetched = fetch(ref.value, policy, etag=validators.get("etag"), last_modified=validators.get("last_modified"))
    # A page's validators replace a recording's fingerprint: an address that served a recording
    # and now serves a page is not probed again.
    web = {"final_url": fetched.url, "etag": fetched.etag, "last_modified": fetched.last_modified, "media_fingerprint": None}
    if fetched.not_modified or fetched.content_hash == validators.get("content_hash"):
        return Unchanged(web)
    content_hash = fetched.content_hash or bytes_sha256(fetched.content)
    inputs = ExtractInputs(
        PurePosixPath(urlsplit(fetched.url).path).name or "index.html",
        fetched.content_type,
        fetched.url,
        fetched.charset,
    )
    return ReadSource(fetched.content, content_hash, inputs, {"content_hash": content_hash, **web})


def _read_stream(
    url: str, policy: FetchPolicy, streams: StreamLimits, validators: dict[str, str], progress: DownloadProgress | None
) -> ReadSource | Unchanged | None:
    """A recording by its probe: unchanged when its fingerprint is, else its site's subtitles or,
    without them, the recording downloaded. None when the site adapter finds no recording at the
    address (an article on a news site): it is read as a page."""
    try:
        found = probe(url, policy, max_seconds=streams.max_seconds)
    except NoMedia:
        return None
    checked = {"final_url": found.page_url, "media_fingerprint": found.fingerprint, "etag": None, "last_modified": None}
    if found.fingerprint == validators.get("media_fingerprint"):
        return Unchanged(checked)
    subtitles = _site_subtitles(found, policy) if streams.use_subtitles else None
    if subtitles is not None:
        data, inputs = subtitles
    else:
        data = download(found, policy, streams, progress=progress)
        inputs = ExtractInputs(found.filename, found.mime, found.page_url, None)
    content_hash = bytes_sha256(data)
    return ReadSource(data, content_hash, inputs, {"content_hash": content_hash, **checked})


def _site_subtitles(found: MediaProbe, policy: FetchPolicy) -> tuple[bytes, ExtractInputs] | None:
    """The site's own subtitles as WebVTT; None when it offers none in the recording's language, or
    they cannot be fetched or hold no cue (the recording is then downloaded and transcribed)."""
    if found.subtitles is None:
        return None
    language, address = found.subtitles
    try:
        data = fetch(address, policy).content
    except PipelineError as error:
        log.warning("subtitles of %s not fetched (%s): transcribing instead", found.page_url, error)
        return None
    if b"-->" not in data:
        return None
    return data, ExtractInputs(f"subtitles.{language}.vtt", VTT_MIME, found.page_url, None)


def extract_read(
    read: ReadSource,
    limits: ExtractLimits,
    *,
    before_page: BeforePage | None = None,
    before_window: BeforeWindow | None = None,
) -> Extraction:
    """The located text of what ``read_source`` read (in the decoder helper, within ``limits``),
    with OCR of the pages that have no text layer (``before_page`` hears of each one first) and
    the transcript of a recording's speech (``before_window`` hears how far it has come)."""
    inputs = read.inputs
    extraction = extract(
        read.data, filename=inputs.filename, mime=inputs.mime, url=inputs.url,
        declared_charset=inputs.declared_charset, limits=limits,
    )
    extraction = transcribe(extraction, limits, before_window=before_window)
    return read_missing_pages(read.data, extraction, limits, before_page=before_page)


def chunk_extraction(
    source_id: str,
    ref: SourceRef,
    extraction: Extraction,
    *,
    meta: dict[str, Any],
    chunking: ChunkSettings,
    embedder: Embedder,
    limits: ExtractLimits,
) -> SourceResult:
    """Chunk and embed one source's extraction; a source with no text ends as an error.

    ``meta`` is what the extract step learnt (content hash, web validators); the result's meta
    adds what the extraction says about the document and the recipe its chunks were made with.
    """
    meta = {
        **meta,
        "mime": extraction.mime,
        "title": (extraction.title or "")[:500] or None,
        "page_count": extraction.page_count,
        "pages_needing_ocr": extraction.pages_needing_ocr,
        "duration_seconds": extraction.duration_seconds,
        "transcribed_by": extraction.transcribed_by,
    }
    unheard = unheard_reason(extraction, limits.speech)
    if not extraction.segments and (unheard is None or unheard.failed):
        code, message = unheard[:2] if unheard else unread_reason(extraction, limits.ocr) or ("NO_TEXT", "No text could be extracted.")
        return SourceResult(source_id, "error", code, message, meta)

    # Chunk ids hash the content *and* the source's identity: the same file attached to two
    # records must not produce colliding ids inside one revision.
    identity = f"{meta['content_hash']}\n{ref.resource_id}\n{ref.field}\n{ref.value}"
    chunks = chunk_segments(extraction.segments, source_fingerprint=bytes_sha256(identity.encode()), settings=chunking)
    vectors = embedder.embed([chunk.text for chunk in chunks])
    rows = [
        {"chunk_id": chunk.chunk_id, "ordinal": chunk.ordinal, "text": chunk.text, "locator": chunk.locator}
        for chunk in chunks
    ]
    note_code, note = (
        truncation_note(extraction.truncated_pages, limits) or unread_reason(extraction, limits.ocr)
        or (unheard[:2] if unheard else (None, None))
    )
    meta["chunking"] = chunking.recipe(embedder.name)
    return SourceResult(
        source_id, "extracted", note_code, note, meta=meta, evidence=evidence_of(embedder.name, rows, vectors)
    )


def process_source(
    source_id: str,
    ref: SourceRef,
    *,
    read_attachment: AttachmentReader,
    policy: FetchPolicy,
    embedder: Embedder,
    limits: ExtractLimits,
    chunking: ChunkSettings = ChunkSettings(),
    validators: dict[str, str] | None = None,
) -> SourceResult:
    """All steps for one source in one place, without a cache (the document-bomb probe runs this
    in a process of its own); expected failures become results."""
    try:
        read = read_source(ref, read_attachment=read_attachment, policy=policy, validators=validators or {})
        if isinstance(read, Unchanged):
            return SourceResult(source_id, "not_modified", meta=read.meta)
        extraction = extract_read(read, limits)
    except PipelineError as err:
        return SourceResult(source_id, "error", err.code, err.message)
    return chunk_extraction(
        source_id, ref, extraction, meta=read.meta, chunking=chunking, embedder=embedder, limits=limits
    )
