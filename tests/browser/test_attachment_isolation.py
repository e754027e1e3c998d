"""Attachment bytes never run as a page of our origin (issue #11, item 2).

The review's attack, end to end in Chromium: a notebook holds a JavaScript attachment and an HTML
attachment whose script tag loads it from our own origin (``script-src 'self'`` allows that). A
signed-in user who opens the HTML attachment's URL must get a download, and the script, which
would read the CSRF token and rename the user's notebook, must never run.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser
from playwright.sync_api import Error as PlaywrightError
from support.live import Deployment, deployment
from support.vault import VaultBuilder

from browser_support import VIEWPORTS

pytestmark = pytest.mark.integration

PAYLOAD = """fetch('/api/session').then((r) => r.json()).then((s) => fetch('/api/notebooks/{victim}', {{
  method: 'PATCH', headers: {{'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf_token}},
  body: JSON.stringify({{title: 'pwned'}}),
}}));
"""
PAGE = """<!doctype html><html><head><title>Reading notes</title>
<script src="{script}"></script></head><body><main><h1>Reading notes</h1>
<p>These notes describe how lighthouse keepers recorded passing ships in their logbooks, season by season.</p>
</main></body></html>
"""


def _file_url(d: Deployment, notebook_id: str) -> str:
    detail = d.api.get(f"/api/notebooks/{notebook_id}").json()
    items = d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]
    source = items[0]["sources"][0]
    assert source["state"] == "available", items
    return f"/api/notebooks/{notebook_id}/sources/{source['id']}/file?revision={detail['active_revision']['id']}"


def test_an_html_attachment_cannot_run_script_in_our_origin(tmp_path: Path, browser: Browser) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="DMCA summary")
    with deployment(tmp_path, vault.root, vault.table_id, redis=False) as d:
        d.start_web()
        victim = d.api.create(["dmca"], title="My private notebook")
        (vault.root / "files" / "payload.js").write_text(PAYLOAD.format(victim=victim))
        vault.record("payload", "Payload", file="files/payload.js")
        carrier = d.api.create(["payload"], title="Scripts")
        d.api.wait_for_job(carrier)
        (vault.root / "files" / "notes.html").write_text(PAGE.format(script=_file_url(d, carrier)))
        vault.record("notes", "Reading notes", file="files/notes.html")
        page_notebook = d.api.create(["notes"], title="Notes")
        d.api.wait_for_job(page_notebook)
        d.api.wait_for_job(victim)

        base = str(d.api.http.base_url).rstrip("/")
        context = browser.new_context(**VIEWPORTS["desktop"])
        try:
            signed_in = context.request.post(f"{base}/api/session", data={"token": d.token})
            assert signed_in.ok
            page = context.new_page()
            with page.expect_download(timeout=10_000) as download:
                try:
                    page.goto(base + _file_url(d, page_notebook))
                except PlaywrightError as err:  # Chromium aborts a navigation that turns into a download
                    assert "Download is starting" in str(err), err
            assert download.value.suggested_filename == "notes.html"
            deadline = time.monotonic() + 3  # time enough for the payload's two requests, had it run
            while time.monotonic() < deadline and d.api.get(f"/api/notebooks/{victim}").json()["title"] != "pwned":
                page.wait_for_timeout(200)
            assert d.api.get(f"/api/notebooks/{victim}").json()["title"] == "My private notebook"
        finally:
            context.close()
