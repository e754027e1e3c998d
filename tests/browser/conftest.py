"""Real Chromium against the real service (`gnosi serve`, embedded broker, real worker).

Chromium is the Debian package; Playwright never downloads a browser. Without it the tests skip,
or fail under GNOSI_REQUIRE_ALL=1. Every page a test opens is watched: a console error or an
uncaught exception fails the test (a CSP violation shows up as a console error).
Screenshots go to $GNOSI_SCREENSHOT_DIR (e.g. docs/screenshots) or to the test's tmp folder.
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser, BrowserContext, Page, expect

from support.live import GNOSI, Deployment, deployment
from support.services import REPO, require
from support.vault import VaultBuilder

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


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict:
    """pytest-playwright launches this instead of a downloaded browser."""
    require(CHROMIUM.exists(), "chromium is not installed (apt-get install chromium)")
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@contextmanager
def slow_web_server(delay: float) -> Iterator[str]:
    """A web page that takes `delay` seconds to answer: ingestion stays busy on it long enough to
    watch the progress name it and to cancel. Daemon threads: shutting down never waits for it."""

    class SlowPage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
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


def _reading_list(vault_root: Path) -> str:
    """A second table with a fetchable attachment: it is still not the References table."""
    folder = vault_root / "Reading list"
    folder.mkdir()
    table_id = "reading-list-0001"
    (folder / "_table.yaml").write_text(
        yaml.safe_dump({"id": table_id, "name": "Reading list", "fields": {"title": "text", "file": "attachment"}})
    )
    (folder / "dmca.md").write_text("---\nid: reading-dmca\ntitle: DMCA again\nfile: files/dmca.pdf\n---\n")
    return table_id


@pytest.fixture(scope="session")
def service(tmp_path_factory, browser_type_launch_args) -> Iterator[Service]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("browser")
    with ExitStack() as stack:
        slow_url = stack.enter_context(slow_web_server(SLOW_PAGE_SECONDS))
        vault = VaultBuilder(tmp / "vault")
        vault.record(
            "dmca", "DMCA summary", file=vault.attach_corpus("pdf/dmca.pdf"),
            authors=["U.S. Copyright Office"], tags=["law"], kind="report",
        )
        vault.record(
            "geotopo", "Géométrie et topologie", file=vault.attach_corpus("pdf/GeoTopo-komprimiert.pdf"),
            authors=["Martin Thoma"], tags=["maths"], kind="lecture notes",
        )
        vault.record("slow-web", "A slow web page", link=f"{slow_url}/slow.html", kind="web page")
        vault.record("empty", "An empty record", authors=["Nobody"], tags=["law"])
        vault.record("template", "Template", template=True)
        reading = _reading_list(vault.root)
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, redis=False))
        subprocess.run(
            [GNOSI, "user", "password", "alice", "--password", ALICE_PASSWORD],
            env=d.env, cwd=REPO, check=True, capture_output=True,
        )
        d.start_web()
        viewer = d.user("victor", "viewer")
        yield Service(
            deployment=d,
            base_url=str(d.api.http.base_url).rstrip("/"),
            alice_token=d.token,
            viewer_token=viewer.http.headers["Authorization"].split()[1],
            reading_table_id=reading,
        )


class PageWatch:
    """Console errors and uncaught exceptions of every page a test opened."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def attach(self, page: Page) -> Page:
        page.on("console", lambda message: message.type == "error" and self.errors.append(f"{page.url}: {message.text}"))
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: uncaught {error}"))
        return page


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """`open_page("desktop"|"mobile")`: a fresh signed-out context; fails the test on console errors."""
    watch = PageWatch()
    contexts: list[BrowserContext] = []

    def open_(viewport: str = "desktop") -> Page:
        context = browser.new_context(**VIEWPORTS[viewport])
        context.set_default_timeout(30_000)
        contexts.append(context)
        return watch.attach(context.new_page())

    yield open_
    for context in contexts:
        context.close()
    assert not watch.errors, "console errors:\n" + "\n".join(watch.errors)


@pytest.fixture
def shot(tmp_path: Path) -> Callable[[Page, str], None]:
    """Save a screenshot of the page (full page) under a stable name."""
    target = Path(os.environ.get("GNOSI_SCREENSHOT_DIR") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)

    def take(page: Page, name: str) -> None:
        page.screenshot(path=str(target / f"{name}.png"), full_page=False)

    return take


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
