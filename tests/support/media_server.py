"""A local HTTP server for streaming tests: media files the test can replace, an HLS stream that is
still live, a page whose player offers subtitles, and redirects; it counts the requests for each."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate

from support.services import AnsweringHandler, serve_in_thread

# An HLS media playlist without #EXT-X-ENDLIST: segments are still being added, the stream is live.
LIVE_PLAYLIST = b"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:40\n#EXTINF:6.0,\nseg40.ts\n"


@dataclass
class Served:
    """One thing the server answers with; ``requests`` lists the methods asked of it, in order,
    ``headers`` the headers of each request (names in lower case)."""

    body: bytes
    content_type: str
    version: int = 1
    location: str | None = None  # a redirect to this address instead of the body
    requests: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def replace(self, body: bytes) -> None:
        self.body = body
        self.version += 1

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    @property
    def last_modified(self) -> str:
        return formatdate(1_700_000_000 + self.version * 3600, usegmt=True)


def redirect(location: str) -> Served:
    return Served(b"", "text/plain", location=location)


@contextmanager
def media_server(files: dict[str, Served]) -> Iterator[str]:
    """Serve ``files`` by name on 127.0.0.1; yields the base URL."""

    class Handler(AnsweringHandler):
        def _answer(self, with_body: bool) -> None:
            served = files.get(self.path.lstrip("/").split("?")[0])
            if served is None:
                self.send_error(404)
                return
            served.requests.append(self.command)
            served.headers.append({name.lower(): value for name, value in self.headers.items()})
            if served.location is not None:
                self.send_response(302)
                self.send_header("Location", served.location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", served.content_type)
            self.send_header("Content-Length", str(len(served.body)))
            self.send_header("ETag", served.etag)
            self.send_header("Last-Modified", served.last_modified)
            self.end_headers()
            if with_body:
                try:
                    self.wfile.write(served.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a probe reads the headers of a recording, not the recording

    with serve_in_thread(Handler) as url:
        yield url
