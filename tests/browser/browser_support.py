"""Helpers and settings shared by the browser tests (fixtures are in conftest.py)."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import Page, expect
from support.live import Deployment

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "mobile": {"viewport": {"width": 375, "height": 812}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True},
}
ALICE_PASSWORD = "correct horse battery staple"
INGEST_TIMEOUT_MS = 240_000
SLOW_PAGE_SECONDS = 20.0


@contextmanager
def slow_web_server(delay: float) -> Iterator[str]:
    """A web page that takes `delay` seconds to answer: ingestion stays busy on it long enough to
    watch the progress name it and to cancel. Daemon threads: shutting down never waits for it."""

    class SlowPage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay)
            body = b"<html><head><title>Slow</title></head><body><article><p>A slow page.</p></article></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowPage)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Service:
    deployment: Deployment
    base_url: str
    alice_token: str
    viewer_token: str
    reading_table_id: str


def sign_in_with_token(page: Page, service: Service, token: str, next_path: str = "/notebooks") -> None:
    page.goto(f"{service.base_url}{next_path}")
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    page.get_by_text("Sign in with an API token").click()
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in with token").click()
    expect(page).to_have_url(f"{service.base_url}{next_path}")


def sign_in_with_password(page: Page, service: Service, username: str, password: str) -> None:
    page.goto(f"{service.base_url}/sign-in")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page).to_have_url(f"{service.base_url}/notebooks")


def cited(service: Service, notebook_id: str, question: str, resource_id: str) -> dict:
    """The first citation of ``resource_id`` in the answer to ``question`` (asked through the API)."""
    status, events = service.deployment.api.chat({"notebook_id": notebook_id, "message": question})
    assert status == 200 and events[-1][0] == "done", events
    citations = [c for c in events[-1][1]["citations"] if c["resource_id"] == resource_id]
    assert citations, events[-1][1]
    return citations[0]


def open_citation(page: Page, service: Service, notebook_id: str, citation: dict) -> None:
    """Open a citation's evidence page as a chat citation links it, and wait for the viewer."""
    query = urlencode({"revision": citation["revision_id"], "quote": citation["quote"]})
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}/evidence/{citation['chunk_id']}?{query}")
    expect(page.locator("[data-role=viewer]")).to_have_attribute("data-state", "ready", timeout=60_000)
