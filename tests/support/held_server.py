"""A local web page that is not answered until the test lets it go: a job fetching it stays in
its fetching step for certain, so a test can act on a running job without racing it."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from support.services import AnsweringHandler, serve_in_thread

HOLD_AT_MOST_SECONDS = 60


@contextmanager
def held_page(html: str) -> Iterator[tuple[str, threading.Event]]:
    """(the page's URL, the event that releases every request, held or later)."""
    released = threading.Event()

    class Handler(AnsweringHandler):
        def _answer(self, with_body: bool) -> None:
            released.wait(HOLD_AT_MOST_SECONDS)
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

    with serve_in_thread(Handler) as base_url:
        try:
            yield f"{base_url}/page.html", released
        finally:
            released.set()
