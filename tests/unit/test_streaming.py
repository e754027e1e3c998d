"""Streaming sources through the real yt-dlp against a local server: the metadata-only probe and its
fingerprint, the download under the SSRF guard and the caps, live streams refused, and the address
that plays a recording from the cited second."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits
from pipeline.fetch import FetchPolicy, open_url
from pipeline.source_processing import ReadSource, Unchanged, extract_read, read_source
from pipeline.streaming.download import download
from pipeline.streaming.limits import StreamLimits
from pipeline.streaming.guarded_requests import GuardedYoutubeDL, RequestGuard
from pipeline.streaming.moments import TIME_PLACEHOLDER, moment_url
from pipeline.streaming.probe import is_streaming_url, probe
from pipeline.types import PipelineError, SourceRef
from support.media_server import LIVE_PLAYLIST, Served, media_server, redirect
from support.services import CORPUS

TALK = (CORPUS / "audio" / "sample_10s.mp3").read_bytes()
LOCAL = FetchPolicy(allowlist=("127.0.0.1",))
LONG = 3 * 3600
# An HLS recording that has ended (#EXT-X-ENDLIST): two segments, the two halves of the talk.
VOD_PLAYLIST = b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:5.0,\npart1.mp3\n#EXTINF:5.0,\npart2.mp3\n#EXT-X-ENDLIST\n"
SUBTITLES = b"""WEBVTT

00:00:00.000 --> 00:00:04.000
Shakespeare on Scenery by Oscar Wilde.

00:00:05.280 --> 00:00:09.960
<v Reader>This is a LibriVox recording.
All LibriVox recordings are in the public domain.
"""


def _player_page(*languages: str) -> Served:
    tracks = "".join(f'<track kind="subtitles" srclang="{lang}" src="talk.{lang}.vtt">' for lang in languages)
    page = f'<html><body><h1>A talk</h1><video controls><source src="talk.mp3" type="audio/mpeg">{tracks}</video></body></html>'
    return Served(page.encode(), "text/html; charset=utf-8")


@pytest.fixture
def served() -> Iterator[tuple[str, dict[str, Served]]]:
    files = {
        "talk.mp3": Served(TALK, "audio/mpeg"),
        "live.m3u8": Served(LIVE_PLAYLIST, "application/vnd.apple.mpegurl"),
        "moved.mp3": redirect("http://169.254.169.254/latest/meta-data.mp3"),
        "vod.m3u8": Served(VOD_PLAYLIST, "application/vnd.apple.mpegurl"),
        "part1.mp3": Served(TALK[: len(TALK) // 2], "audio/mpeg"),
        "part2.mp3": Served(TALK[len(TALK) // 2 :], "audio/mpeg"),
        "player.html": _player_page("en"),
        "bilingual.html": _player_page("en", "de"),
        "talk.en.vtt": Served(SUBTITLES, "text/vtt"),
        "talk.de.vtt": Served(SUBTITLES, "text/vtt"),
    }
    with media_server(files) as base:
        yield base, files


def _read(url: str, validators: dict[str, str], streams: StreamLimits = StreamLimits()) -> ReadSource | Unchanged:
    ref = SourceRef("talk", "link", "url", url)
    return read_source(ref, read_attachment=lambda: (b"", ""), policy=LOCAL, validators=validators, streams=streams)


def test_a_media_link_is_probed_and_downloaded_only_when_its_fingerprint_moves(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    talk = files["talk.mp3"]
    first = _read(f"{base}/talk.mp3", {})
    assert isinstance(first, ReadSource) and first.data == TALK
    assert (first.inputs.filename, first.inputs.mime) == ("recording.mp3", "audio/mpeg")
    fingerprint = first.meta["media_fingerprint"]
    assert talk.requests == ["GET", "GET"]  # the probe (headers only), the download

    again = _read(f"{base}/talk.mp3", {"media_fingerprint": fingerprint})
    assert isinstance(again, Unchanged) and again.meta["media_fingerprint"] == fingerprint
    assert talk.requests == ["GET", "GET", "GET"], "an unchanged recording was downloaded again"

    talk.replace(TALK + TALK[-4096:])  # a larger file: its size and validators move
    changed = _read(f"{base}/talk.mp3", {"media_fingerprint": fingerprint})
    assert isinstance(changed, ReadSource) and len(changed.data) == len(TALK) + 4096
    assert changed.meta["media_fingerprint"] != fingerprint
    assert len(talk.requests) == 5


def test_the_sites_own_subtitles_are_read_instead_of_transcribing(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    assert probe(f"{base}/player.html", LOCAL, max_seconds=LONG).subtitles == ("en", f"{base}/talk.en.vtt")
    # Two languages and none said to be the recording's: either may be a translation, so transcribe.
    assert probe(f"{base}/bilingual.html", LOCAL, max_seconds=LONG).subtitles is None

    read = _read(f"{base}/player.html", {"media_fingerprint": "of an earlier check"})
    assert isinstance(read, ReadSource) and read.data == SUBTITLES and read.inputs.mime == "text/vtt"
    assert files["talk.mp3"].requests == [], "the recording was downloaded although subtitles were read"
    extraction = extract_read(read, ExtractLimits())
    assert extraction.transcribed_by == "site subtitles (en)" and extraction.duration_seconds == 9.96
    assert [(s.text, s.locator["start"], s.locator["end"]) for s in extraction.segments] == [
        ("Shakespeare on Scenery by Oscar Wilde.", 0.0, 4.0),
        ("This is a LibriVox recording. All LibriVox recordings are in the public domain.", 5.28, 9.96),
    ]
    without = _read(f"{base}/player.html", {"media_fingerprint": "of an earlier check"}, StreamLimits(use_subtitles=False))
    assert isinstance(without, ReadSource) and without.data == TALK


def test_a_malformed_subtitles_file_fails_with_its_code() -> None:
    with pytest.raises(PipelineError) as malformed:
        extract(b"Shakespeare on Scenery", filename="subtitles.en.vtt", mime="text/vtt", limits=ExtractLimits())
    assert malformed.value.code == "SUBTITLES_INVALID"


def test_a_streamed_recording_is_downloaded_segment_by_segment_through_the_guard(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    found = probe(f"{base}/vod.m3u8", LOCAL, max_seconds=LONG)
    assert (found.duration, found.info["protocol"]) == (10, "m3u8_native")
    assert download(found, LOCAL, StreamLimits()) == TALK
    assert (files["part1.mp3"].requests, files["part2.mp3"].requests) == (["GET"], ["GET"])
    with pytest.raises(PipelineError) as refused:
        probe(f"{base}/vod.m3u8", LOCAL, max_seconds=9)
    assert refused.value.code == "MEDIA_TOO_LONG"


def test_the_guard_holds_only_the_connections_still_open(served: tuple[str, dict[str, Served]]) -> None:
    """A download of thousands of segments must not keep one entry per finished request."""
    base, _ = served
    guard = RequestGuard(LOCAL, max_bytes=10 * len(TALK), within_s=60)
    with GuardedYoutubeDL({"quiet": True}, guard) as ydl:
        for part in ("part1.mp3", "part2.mp3", "talk.mp3"):
            ydl.urlopen(f"{base}/{part}").read()
        assert guard.open_requests == 0 and guard.read_bytes == 2 * len(TALK)
        unread = ydl.urlopen(f"{base}/talk.mp3")
        assert guard.open_requests == 1
        unread.close()
        assert guard.open_requests == 0
        ydl.urlopen(f"{base}/talk.mp3")
        guard.close()
        assert guard.open_requests == 0


def test_a_live_stream_is_refused_with_its_reason(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    with pytest.raises(PipelineError) as refused:
        _read(f"{base}/live.m3u8", {})
    assert refused.value.code == "MEDIA_LIVE" and "live" in refused.value.message


def test_every_request_of_yt_dlp_passes_the_address_policy(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    with pytest.raises(PipelineError) as blocked:
        probe(f"{base}/talk.mp3", FetchPolicy(), max_seconds=LONG)  # no allowlist: loopback is private
    assert blocked.value.code == "URL_BLOCKED"
    with pytest.raises(PipelineError) as redirected:
        probe(f"{base}/moved.mp3", LOCAL, max_seconds=LONG)
    assert redirected.value.code == "URL_BLOCKED" and "169.254.169.254" in redirected.value.message
    assert files["moved.mp3"].requests == ["GET"]


def test_credentials_do_not_follow_a_redirect_to_another_origin() -> None:
    """yt-dlp hands its handler a site's cookies (and a URL's user:password as Authorization)."""
    landing = {"talk.mp3": Served(TALK, "audio/mpeg")}
    with media_server(landing) as other:
        hops = {"same.mp3": redirect("/talk.mp3"), "away.mp3": redirect(f"{other}/talk.mp3"), "talk.mp3": Served(TALK, "audio/mpeg")}
        with media_server(hops) as base:
            credentials = {"Cookie": "session=1", "Authorization": "Basic YTpi"}
            for name in ("same.mp3", "away.mp3"):
                with open_url(f"{base}/{name}", LOCAL, deadline=time.monotonic() + 10, headers=credentials) as opened:
                    assert opened.response.status_code == 200
    kept = hops["talk.mp3"].headers[0]
    assert (kept.get("cookie"), kept.get("authorization")) == ("session=1", "Basic YTpi")
    dropped = landing["talk.mp3"].headers[0]
    assert "cookie" not in dropped and "authorization" not in dropped


def test_a_page_that_no_longer_holds_a_recording_is_read_as_a_page(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    files["player.html"].replace(b"<html><body><article><p>The talk has moved to the archive.</p></article></body></html>")
    read = _read(f"{base}/player.html", {"media_fingerprint": "of an earlier check"})
    assert isinstance(read, ReadSource) and read.inputs.mime == "text/html"
    assert read.meta["media_fingerprint"] is None, "the next check would probe it again"


def test_subtitles_that_cannot_be_fetched_are_transcribed_instead(served: tuple[str, dict[str, Served]]) -> None:
    base, files = served
    del files["talk.en.vtt"]
    read = _read(f"{base}/player.html", {"media_fingerprint": "of an earlier check"})
    assert isinstance(read, ReadSource) and read.data == TALK


def test_downloads_obey_the_size_cap(served: tuple[str, dict[str, Served]]) -> None:
    base, _ = served
    found = probe(f"{base}/talk.mp3", LOCAL, max_seconds=LONG)
    with pytest.raises(PipelineError) as refused:
        download(found, LOCAL, StreamLimits(max_bytes=64 * 1024))
    assert refused.value.code == "MEDIA_TOO_LARGE"


def test_an_unreachable_or_missing_recording_fails_with_a_bounded_reason(served: tuple[str, dict[str, Served]]) -> None:
    base, _ = served
    with pytest.raises(PipelineError) as missing:
        probe(f"{base}/gone.mp3", LOCAL, max_seconds=LONG)
    assert missing.value.code == "FETCH_HTTP_ERROR" and "404" in missing.value.message
    with pytest.raises(PipelineError) as unreachable:
        probe("http://127.0.0.1:9/talk.mp3", LOCAL, max_seconds=LONG)
    assert unreachable.value.code == "FETCH_UNREACHABLE"


def test_which_addresses_are_probed_as_recordings() -> None:
    assert is_streaming_url("https://www.youtube.com/watch?v=dQw4w9WgXcQ")
    assert is_streaming_url("https://vimeo.com/76979871")
    assert is_streaming_url("https://example.org/talks/keynote.MP3")
    assert not is_streaming_url("https://example.org/articles/keynote.html")
    assert not is_streaming_url("https://en.wikipedia.org/wiki/Lighthouse")


def test_a_recording_on_its_site_opens_at_the_cited_second() -> None:
    assert moment_url("https://www.youtube.com/watch?v=abc&t=5s", 72.9) == "https://www.youtube.com/watch?v=abc&t=72s"
    assert moment_url("https://youtu.be/abc", 3) == "https://youtu.be/abc?t=3s"
    assert moment_url("https://vimeo.com/76979871#t=1s", 61.2) == "https://vimeo.com/76979871#t=61s"
    assert moment_url("https://example.org/talk.mp3#x", 12.5) == "https://example.org/talk.mp3#t=12"
    assert moment_url("https://example.org/talk.mp3", TIME_PLACEHOLDER) == "https://example.org/talk.mp3#t={t}"
