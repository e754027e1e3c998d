"""What one recording from a streaming site may cost; settings build it without loading yt-dlp."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamLimits:
    """``max_bytes`` bounds the recording (GNOSI_ATTACHMENT_MAX_BYTES: a recording from a site is held
    to what an upload may be), ``timeout_s`` the whole download (GNOSI_MEDIA_DOWNLOAD_TIMEOUT_SECONDS)
    and ``max_seconds`` how long it may play (GNOSI_SPEECH_MAX_SECONDS), refused before downloading
    when the site says. ``use_subtitles``: read the site's own subtitles instead of transcribing,
    when it offers them in the recording's language (GNOSI_MEDIA_SUBTITLES)."""

    max_bytes: int = 200 * 1024 * 1024
    timeout_s: float = 1800.0
    max_seconds: int = 3 * 3600
    use_subtitles: bool = True
