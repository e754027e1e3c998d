"""What a streaming site (or a direct media link) says about a recording, without downloading it.

yt-dlp's extractors (YouTube, Vimeo and the other sites it supports, and its generic extractor
for direct media links and pages that embed a player) are asked for the recording's metadata only
(``extract_info(download=False)``). From it comes the deterministic media fingerprint the core
spec names: identity (extractor, id, page address), duration, upload and modification times, live
state and size. A refresh downloads and transcribes again only when that fingerprint moved.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from yt_dlp.extractor import gen_extractor_classes
from yt_dlp.networking.exceptions import HTTPError, TransportError
from yt_dlp.utils import UnsupportedError, YoutubeDLError, remove_terminal_sequences

from pipeline.extractors.media import MIME_OF_EXTENSION
from pipeline.fetch import FetchPolicy
from pipeline.streaming.guarded_requests import GuardedYoutubeDL, RequestGuard
from pipeline.types import PipelineError

log = logging.getLogger(__name__)

# Links to a media file by its name (the generic extractor reads them as direct links).
MEDIA_EXTENSIONS = frozenset({
    "mp3", "wav", "flac", "ogg", "oga", "opus", "m4a", "aac", "mp4", "m4v", "mov", "webm", "mkv", "m3u8", "mpd",
})
# One file with sound: the best audio-only format, else the best single file with audio and video
# (never two formats to merge, which needs ffmpeg).
_FORMAT = "bestaudio/best[acodec!=none]/best"
_NOT_OVER = {"is_live": "is live now", "is_upcoming": "has not started yet", "post_live": "has just ended"}
# How site adapters say a page holds no recording (an article, a post without a video).
_NO_RECORDING = re.compile(
    r"no (?:video|media|audio)|no (?:video )?formats? found|unsupported url|unable to extract|"
    r"does not (?:contain|have) (?:a |any )?(?:video|media)",
    re.IGNORECASE,
)
# A probe reads a page, a player's script, an API answer or a manifest: its time is a few fetches'.
_PROBE_FETCHES = 4
# What the fingerprint is made of; a direct link adds its response's size and validators.
_IDENTITY = ("extractor_key", "id", "webpage_url")
_TIMES = ("duration", "timestamp", "upload_date", "release_timestamp", "modified_timestamp", "modified_date")
_DIRECT_HEADERS = ("content-length", "etag", "last-modified")


def ydl_params(**more: Any) -> dict[str, Any]:
    """yt-dlp options shared by the probe and the download: no console output, no cache folder,
    no playlists, no post-processing, native downloaders only."""
    return {
        "quiet": True, "no_warnings": True, "noprogress": True, "logger": log, "color": "never",
        "cachedir": False, "noplaylist": True, "format": _FORMAT, "check_formats": False,
        "extractor_retries": 1, "retries": 2, "fragment_retries": 2, "skip_unavailable_fragments": False,
        "postprocessors": [],
        **more,
    }


@dataclass(frozen=True)
class MediaProbe:
    """One recording as its site describes it; ``info`` is yt-dlp's, with the format chosen."""

    page_url: str
    title: str | None
    duration: float | None
    fingerprint: str
    info: dict[str, Any]

    @property
    def subtitles(self) -> tuple[str, str] | None:
        """The site's own subtitles (not its automatic captions) in the recording's language, as
        (language, WebVTT address): the language the site names, else the only one offered. None
        when that is not known: subtitles in another language would be a translation."""
        offered = {
            language: url
            for language, tracks in (self.info.get("subtitles") or {}).items()
            for url in [next((t.get("url") for t in tracks if t.get("ext") == "vtt" and t.get("url")), None)]
            if url
        }
        spoken = self.info.get("language")
        language = spoken if spoken in offered else next(iter(offered)) if len(offered) == 1 and not spoken else None
        return (language, offered[language]) if language else None

    @property
    def filename(self) -> str:
        return f"recording.{self.info.get('ext') or 'media'}"

    @property
    def mime(self) -> str:
        ext = self.info.get("ext") or "octet-stream"
        kind = "audio" if self.info.get("vcodec") == "none" else "video"
        return MIME_OF_EXTENSION.get(ext) or f"{kind}/{ext}"


def is_streaming_url(url: str) -> bool:
    """A link to a media file by its extension, or a page a site adapter of yt-dlp claims."""
    if PurePosixPath(urlsplit(url).path).suffix.lower().lstrip(".") in MEDIA_EXTENSIONS:
        return True
    return any(extractor.suitable(url) for extractor in _site_extractors())


def _site_extractors() -> list[Any]:
    global _SITE_EXTRACTORS
    if _SITE_EXTRACTORS is None:
        _SITE_EXTRACTORS = [extractor for extractor in gen_extractor_classes() if extractor.ie_key() != "Generic"]
    return _SITE_EXTRACTORS


_SITE_EXTRACTORS: list[Any] | None = None


class NoMedia(Exception):
    """The site adapter found no recording at this address (an article page): read it as a page."""


def probe(url: str, policy: FetchPolicy, *, max_seconds: int) -> MediaProbe:
    """The recording at ``url`` and its fingerprint, from metadata alone.

    Raises ``NoMedia`` when there is none, and ``PipelineError``: the guard's refusal
    (URL_BLOCKED, FETCH_*), MEDIA_LIVE, MEDIA_DRM, MEDIA_PLAYLIST, MEDIA_TOO_LONG or
    MEDIA_UNAVAILABLE (the site's reason).
    """
    # Pages, player scripts and manifests: a web page's size cap, and a few pages' time.
    guard = RequestGuard(policy, policy.max_bytes, within_s=_PROBE_FETCHES * policy.timeout_s)
    try:
        with GuardedYoutubeDL(ydl_params(extract_flat="in_playlist"), guard) as ydl:
            info = ydl.sanitize_info(ydl.extract_info(url, download=False))
    except YoutubeDLError as error:
        raise guard.refusal or _probe_error(error, guard.failure) from None
    except Exception:  # a site adapter's own bug (yt-dlp wraps only some): the address is still a page
        log.warning("yt-dlp failed on %s", url, exc_info=True)
        raise guard.refusal or NoMedia("the site adapter failed") from None
    finally:
        guard.close()
    _refuse_unplayable(info, max_seconds)
    return MediaProbe(
        page_url=info.get("webpage_url") or url,
        title=info.get("title"),
        duration=info.get("duration"),
        fingerprint=fingerprint(info, guard.seen.get(info.get("url") or "", {})),
        info=info,
    )


def fingerprint(info: dict[str, Any], direct_headers: dict[str, str]) -> str:
    """The deterministic media fingerprint: a hash of identity, duration, times, live state and size."""
    facts = {name: info.get(name) for name in (*_IDENTITY, *_TIMES, "live_status")}
    facts["size"] = info.get("filesize") or info.get("filesize_approx")
    if info.get("direct"):
        lowered = {name.lower(): value for name, value in direct_headers.items()}
        facts.update({name: lowered.get(name) for name in _DIRECT_HEADERS})
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def _refuse_unplayable(info: dict[str, Any], max_seconds: int) -> None:
    if info.get("_type") in ("playlist", "multi_video"):
        count = len(info.get("entries") or [])
        raise PipelineError("MEDIA_PLAYLIST", f"This address is a playlist of {count} recordings: add each recording's address.")
    not_over = _NOT_OVER.get(info.get("live_status") or ("is_live" if info.get("is_live") else ""))
    if not_over:
        raise PipelineError(
            "MEDIA_LIVE",
            f"This stream {not_over}: a live stream has no end to transcribe. Add it again once the site "
            "publishes the finished recording.",
        )
    duration = info.get("duration")
    if duration and duration > max_seconds:
        raise PipelineError(
            "MEDIA_TOO_LONG",
            f"The recording plays {duration / 60:,.0f} minutes, over the {max_seconds / 60:,.0f}-minute "
            "limit (GNOSI_SPEECH_MAX_SECONDS).",
        )
    if not info.get("url"):
        raise PipelineError("MEDIA_UNAVAILABLE", "The site offers no single file with the recording's sound to download.")


def _probe_error(error: YoutubeDLError, failure: PipelineError | None) -> PipelineError | NoMedia:
    """What yt-dlp's error means: a connection that kept failing (``failure``), no recording at the
    address (a page), DRM, the site's HTTP error, or the site's own reason."""
    cause = (getattr(error, "exc_info", None) or (None, error))[1]
    message = remove_terminal_sequences(str(error)).removeprefix("ERROR: ").strip()
    links = (cause, getattr(cause, "cause", None))
    if failure is not None and any(isinstance(link, TransportError) for link in links):
        return failure
    if isinstance(cause, UnsupportedError) or _NO_RECORDING.search(message):
        return NoMedia(message)
    answered = next((link for link in links if isinstance(link, HTTPError)), None)
    if answered is not None:
        return PipelineError("FETCH_HTTP_ERROR", f"The site answered HTTP {answered.status} for the recording.")
    if "DRM" in message:
        return PipelineError("MEDIA_DRM", "The site protects this recording with DRM: it cannot be downloaded to transcribe.")
    return PipelineError("MEDIA_UNAVAILABLE", f"The site did not give the recording: {message[:300]}")
