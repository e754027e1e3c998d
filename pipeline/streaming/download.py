"""Download the recording a probe chose, through the guard, within the size and time caps.

Only yt-dlp's native downloaders run (one HTTP file, HLS or DASH segments), so every byte comes
through ``GuardedRH``. ffmpeg is never used: it would fetch on its own, past the address policy
(``ffmpeg_location`` is an empty folder, which yt-dlp reads as "not installed").
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from yt_dlp.downloader import get_suitable_downloader
from yt_dlp.downloader.dash import DashSegmentsFD
from yt_dlp.downloader.hls import HlsFD
from yt_dlp.downloader.http import HttpFD
from yt_dlp.utils import YoutubeDLError, remove_terminal_sequences

from pipeline.fetch import FetchPolicy
from pipeline.streaming.guarded_requests import GuardedYoutubeDL, RequestGuard, too_large
from pipeline.streaming.limits import StreamLimits
from pipeline.streaming.probe import MediaProbe, ydl_params
from pipeline.types import PipelineError

_NATIVE = (HttpFD, HlsFD, DashSegmentsFD)
_PROGRESS_EVERY_SECONDS = 5.0

# Told how many bytes have come of how many (None: the site did not say); may raise to stop.
DownloadProgress = Callable[[int, int | None], None]


def download(
    probe: MediaProbe, policy: FetchPolicy, limits: StreamLimits, *, progress: DownloadProgress | None = None
) -> bytes:
    """The recording's bytes. Raises ``PipelineError``: the guard's refusal (URL_BLOCKED,
    FETCH_TIMEOUT, MEDIA_TOO_LARGE, or what ``progress`` raised), MEDIA_STREAM_UNSUPPORTED,
    MEDIA_DOWNLOAD_FAILED."""
    guard = RequestGuard(replace(policy, timeout_s=limits.timeout_s), limits.max_bytes, within_s=limits.timeout_s)
    with tempfile.TemporaryDirectory(prefix="gnosi-media-") as folder:
        no_ffmpeg = Path(folder) / "no-ffmpeg"
        no_ffmpeg.mkdir()
        params = ydl_params(
            nopart=True, continuedl=False, overwrites=True, outtmpl={"default": str(Path(folder) / "recording.%(ext)s")},
            ffmpeg_location=str(no_ffmpeg),
            progress_hooks=[_reporter(guard, progress)] if progress else [],
        )
        info = dict(probe.info)
        size = info.get("filesize") or info.get("filesize_approx")
        if size and size > limits.max_bytes:
            raise too_large(limits.max_bytes)
        downloader = get_suitable_downloader(info, params)
        if downloader is None or not issubclass(downloader, _NATIVE):
            raise PipelineError(
                "MEDIA_STREAM_UNSUPPORTED",
                f"This recording is served over {info.get('protocol')}, which is not downloaded here.",
            )
        path = Path(folder) / probe.filename
        try:
            # As yt-dlp downloads from a saved description (--load-info-json): the cookies the probe
            # was given come along, and the format is the one the probe chose.
            with GuardedYoutubeDL(params, guard) as ydl:
                ydl.process_ie_result(info, download=True)
        except YoutubeDLError as error:
            message = remove_terminal_sequences(str(error)).removeprefix("ERROR: ").strip()
            failed = guard.refusal or guard.failure
            raise failed or PipelineError("MEDIA_DOWNLOAD_FAILED", f"The download failed: {message[:300]}") from None
        finally:
            guard.close()
        if guard.refusal is not None:
            raise guard.refusal
        if not path.is_file():
            raise PipelineError("MEDIA_DOWNLOAD_FAILED", "The site ended the download before the recording did.")
        return path.read_bytes()


def _reporter(guard: RequestGuard, progress: DownloadProgress) -> Callable[[dict[str, Any]], None]:
    """A yt-dlp progress hook that tells ``progress`` every few seconds; what it raises stops the
    download (it is remembered by the guard, since yt-dlp may report it as its own error)."""
    last = [0.0]

    def hook(status: dict[str, Any]) -> None:
        now = time.monotonic()
        if status.get("status") != "downloading" or now - last[0] < _PROGRESS_EVERY_SECONDS:
            return
        last[0] = now
        try:
            total = status.get("total_bytes") or status.get("total_bytes_estimate")
            progress(int(status.get("downloaded_bytes") or 0), int(total) if total else None)
        except PipelineError as error:
            raise guard.refuse(error) from None

    return hook
