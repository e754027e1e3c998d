"""The address that plays a recording from a given second, on its own site.

A media file takes a media fragment (``#t=12``); YouTube reads the time from the query
(``?t=12s``), Vimeo from the fragment (``#t=12s``). Whole seconds, rounded down: a citation
starts at or just before the quoted words, never after them.
"""
from __future__ import annotations

from urllib.parse import urldefrag, urlsplit

_QUERY_TIME_HOSTS = frozenset({"youtube.com", "www.youtube.com", "m.youtube.com", "music.youtube.com", "youtu.be"})
_FRAGMENT_SECONDS_HOSTS = frozenset({"vimeo.com", "www.vimeo.com", "player.vimeo.com"})
TIME_PLACEHOLDER = "{t}"


def moment_url(page_url: str, at: float | str) -> str:
    """``page_url`` playing from ``at`` seconds; ``at`` may be ``TIME_PLACEHOLDER``, which makes a
    template the dashboard fills in with whole seconds."""
    seconds = at if isinstance(at, str) else str(int(at))
    page_url = urldefrag(page_url).url
    host = (urlsplit(page_url).hostname or "").lower()
    if host in _QUERY_TIME_HOSTS:
        base, _, query = page_url.partition("?")
        kept = [pair for pair in query.split("&") if pair and not pair.startswith("t=")]
        return f"{base}?{'&'.join([*kept, f't={seconds}s'])}"
    if host in _FRAGMENT_SECONDS_HOSTS:
        return f"{page_url}#t={seconds}s"
    return f"{page_url}#t={seconds}"
