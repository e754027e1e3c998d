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
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from browser_support import (
    ALICE_PASSWORD,
    CHROMIUM,
    CHROMIUM_ARGS,
    SLOW_PAGE_SECONDS,
    VIEWPORTS,
    Service,
    slow_web_server,
)
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page
from support.live import GNOSI, deployment
from support.services import REPO, require
from support.vault import VaultBuilder


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict:
    """pytest-playwright launches this instead of a downloaded browser."""
    require(CHROMIUM.exists(), "chromium is not installed (apt-get install chromium)")
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


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
        vault.record("private", "A private address", link="http://10.1.2.3/page.html")
        vault.record("damaged", "A damaged PDF", file=vault.attach_corpus("pdf/invalid.pdf"), kind="damaged")
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

    def attach(self, page: Page, expected: str | None = None) -> Page:
        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error" and not (expected and re.search(expected, message.text)):
                self.errors.append(f"{page.url}: {message.text}")

        page.on("console", on_console)
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: uncaught {error}"))
        return page


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """`open_page("desktop"|"mobile")`: a fresh signed-out context; fails the test on console errors."""
    watch = PageWatch()
    contexts: list[BrowserContext] = []

    def open_(viewport: str = "desktop", *, expected_errors: str | None = None) -> Page:
        """`expected_errors`: a regex of console errors this page is meant to cause."""
        context = browser.new_context(**VIEWPORTS[viewport])
        context.set_default_timeout(30_000)
        contexts.append(context)
        return watch.attach(context.new_page(), expected_errors)

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
