"""A local HTTP server whose pages the test can change, with or without validators."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler

from support.services import serve_in_thread


@dataclass
class Page:
    body: str
    validators: str  # "etag", "last_modified" or "none"
    version: int = 1
    requests: list[dict[str, str]] = field(default_factory=list)

    def change(self, body: str) -> None:
        self.body = body
        self.version += 1

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body.encode()).hexdigest()[:16] + '"'

    @property
    def last_modified(self) -> str:
        return formatdate(1_700_000_000 + self.version * 3600, usegmt=True)


@contextmanager
def changing_server(pages: dict[str, Page]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            page = pages.get(self.path.lstrip("/"))
            if page is None:
                self.send_error(404)
                return
            page.requests.append({k.lower(): v for k, v in self.headers.items()})
            headers = {}
            if page.validators == "etag":
                headers["ETag"] = page.etag
                if self.headers.get("If-None-Match") == page.etag:
                    self._answer(304, headers, b"")
                    return
            if page.validators == "last_modified":
                headers["Last-Modified"] = page.last_modified
                if self.headers.get("If-Modified-Since") == page.last_modified:
                    self._answer(304, headers, b"")
                    return
            html = f"<html><head><title>{self.path}</title></head><body><article><p>{page.body}</p></article></body></html>"
            self._answer(200, {**headers, "Content-Type": "text/html; charset=utf-8"}, html.encode())

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_in_thread(Handler) as url:
        yield url
