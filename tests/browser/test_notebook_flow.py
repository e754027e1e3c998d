"""The main dashboard flow in a real browser, on a desktop and a 375 px wide phone: sign in,
create a notebook from the References table with two corpus PDFs, watch ingestion progress
reach "available", ask a question, and open a citation in the PDF viewer at the cited page with
the quoted passage highlighted."""
from __future__ import annotations

import re
import time

import pytest
from browser_support import (
    ALICE_PASSWORD,
    INGEST_TIMEOUT_MS,
    sign_in_with_password,
    sign_in_with_token,
)
from playwright.sync_api import Page, expect

FLOWS = {
    "desktop": {
        "question": "What happens under the notice and takedown procedure?",
        "page": 12,
        "label": None,
        "words": "notice and takedown procedure",
        "record": "DMCA summary",
    },
    "mobile": {
        # Answered by the body sentence of page 40, not by its figure's caption (captions are
        # never quoted as answers).
        "question": "Können Tori simplizial auf Sphären abgebildet werden?",
        "page": 40,
        "label": "37",
        "words": "Tori können simplizial auf Sphären abgebildet werden",
        "record": "Géométrie et topologie",
    },
}


def squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def assert_fits_the_screen(page: Page) -> None:
    """Nothing wider than the viewport once the layout settled: no sideways scrolling on a phone."""
    limit = page.viewport_size["width"]
    for _ in range(20):
        if page.evaluate("() => document.documentElement.scrollWidth") <= limit:
            return
        page.wait_for_timeout(250)
    wide = page.evaluate("""(limit) => [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > limit + 1)
      .slice(0, 8).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}px`)""", limit)
    raise AssertionError(f"wider than {limit}px: {wide}")


def watch_progress(page: Page) -> list[str]:
    """Every distinct progress line shown until the notebook is ready (ingestion may be quick)."""
    status = page.locator("[data-role=notebook-status]")
    progress = page.locator("[data-role=progress-text]")
    seen: list[str] = []
    deadline = time.monotonic() + INGEST_TIMEOUT_MS / 1000
    while status.text_content() != "Ready":
        assert time.monotonic() < deadline, f"not ready; progress seen: {seen}"
        text = progress.text_content() if progress.is_visible() else None
        if text and (not seen or seen[-1] != text.strip()):
            seen.append(text.strip())
        page.wait_for_timeout(150)
    return seen


def create_from_references(page: Page, title: str, shot, viewport: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("navigation", name="Main").get_by_role("link", name="References").click()
    expect(page.get_by_role("heading", name="References")).to_be_visible()
    expect(page.get_by_text(re.compile(r"3 cannot be chosen"))).to_be_visible()
    page.get_by_label("Select DMCA summary").check()
    page.get_by_label("Select Géométrie et topologie").check()
    expect(page.get_by_text("2 selected")).to_be_visible()
    page.get_by_role("button", name="Create notebook").click()
    dialog = page.get_by_role("dialog", name="Create notebook")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Title").fill(title)
    dialog.get_by_label("Visibility").select_option("workspace")
    expect(dialog.get_by_text("(2 selected)")).to_be_visible()
    expect(dialog.get_by_text(re.compile(
        r"3 records omitted: 1 × Template \(template: true\).*; 1 × URL not fetched.*GNOSI_URL_ALLOWLIST.*; "
        r"1 × No attachment or URL\."
    ))).to_be_visible()
    expect(dialog.get_by_role("listitem")).to_have_count(4)  # the empty, private and template records are not offered
    if viewport == "desktop":
        shot(page, "create-dialog")
    dialog.get_by_role("button", name="Create notebook").click()
    expect(page).to_have_url(re.compile(r"/notebooks/[^/]+$"))


@pytest.mark.parametrize("viewport", ["desktop", "mobile"])
def test_create_ask_and_open_the_cited_page(service, open_page, shot, viewport: str) -> None:  # type: ignore[no-untyped-def]
    flow = FLOWS[viewport]
    page = open_page(viewport)
    if viewport == "desktop":
        sign_in_with_password(page, service, "alice", ALICE_PASSWORD)
        expect(page.get_by_role("heading", name="Library")).to_be_visible()
    else:
        sign_in_with_token(page, service, service.alice_token)
        expect(page.get_by_role("heading", name="Library")).to_be_visible()
        assert_fits_the_screen(page)
        shot(page, "library-mobile")
    create_from_references(page, f"Law and topology ({viewport})", shot, viewport)

    sources = page.locator("#panel-sources")
    if viewport == "mobile":
        expect(page.get_by_role("tab", name="Sources")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#panel-chat")).to_be_hidden()
    progress = page.get_by_role("status").filter(has=page.locator("progress"))
    seen = watch_progress(page)
    assert any(re.match(r"(Queued|Indexing)", text) for text in seen), seen
    expect(sources.locator(".source-item[data-state=available]")).to_have_count(2)
    expect(progress).to_be_hidden()
    expect(sources.get_by_text("Last successful check: never")).to_have_count(0)

    if viewport == "mobile":
        assert_fits_the_screen(page)
        shot(page, "mobile-tabs-sources")
        page.get_by_role("tab", name="Sources").press("ArrowRight")  # keyboard: WAI-ARIA tabs
        expect(page.get_by_role("tab", name="Chat")).to_be_focused()
        expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
        expect(sources).to_be_hidden()
    chat = page.locator("#panel-chat")
    composer = chat.get_by_label("Ask a question about the sources")
    expect(composer).to_be_enabled()
    composer.fill(flow["question"])
    composer.press("Enter")
    answer = chat.locator("li.msg-assistant").last
    expect(answer).to_have_attribute("aria-live", "polite")
    expect(answer).to_have_attribute("aria-busy", "false", timeout=60_000)
    citation = answer.locator("ol.citations a", has_text=f"p. {flow['page']}").first
    expect(citation).to_be_visible()
    expect(citation).to_have_text(re.compile(rf"^{flow['record']} · p\. {flow['page']}"))  # the record's title, not its path
    expect(answer.locator(".msg-text a.cite").first).to_have_attribute("href", re.compile(r"/evidence/"))
    if viewport == "mobile":
        assert_fits_the_screen(page)
    shot(page, "notebook-desktop" if viewport == "desktop" else "mobile-tabs-chat")

    citation.click()
    viewer = page.get_by_role("dialog", name="Cited evidence").locator("[data-role=viewer]")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(viewer.locator("[data-role=viewer-page-number]")).to_have_text(re.compile(rf"^Page {flow['page']} of \d+$"))
    if flow["label"]:
        expect(viewer.locator("[data-role=viewer-meta]")).to_contain_text(f"printed page {flow['label']}")
    expect(viewer.locator(".viewer-title")).to_contain_text(flow["record"])
    sheet = viewer.locator(f".pdf-page[data-page-number='{flow['page']}']")
    expect(sheet).to_have_attribute("data-highlighted", "true")
    marks = sheet.locator(".textLayer mark.highlight")
    expect(marks.first).to_be_visible()
    assert squashed(flow["words"]) in squashed(" ".join(marks.all_text_contents()))
    shot(page, "pdf-viewer" if viewport == "desktop" else "pdf-viewer-mobile")
    page.get_by_role("dialog", name="Cited evidence").get_by_role("button", name="Close").click()
    expect(viewer).to_be_hidden()
    page.reload()  # the transcript comes back from the server: the labels are still titles
    reloaded = page.locator("#panel-chat li.msg-assistant").last.locator("ol.citations a", has_text=f"p. {flow['page']}").first
    expect(reloaded).to_have_text(re.compile(rf"^{flow['record']} · p\. {flow['page']}"))

    # The same link opened on its own (a new tab) shows the same page and passage.
    standalone = page.context.new_page()
    standalone.goto(service.base_url + citation.get_attribute("href"))
    alone = standalone.locator("[data-role=viewer]")
    expect(alone).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(alone.locator("[data-role=viewer-page-number]")).to_have_text(re.compile(rf"^Page {flow['page']} of \d+$"))
    expect(alone.locator(".textLayer mark.highlight").first).to_be_visible()
    standalone.close()
    if viewport == "desktop":
        # A question whose words the DMCA summary shares but whose answer it lacks: refused, with
        # where the notebook comes closest, each passage opening in the viewer like a citation.
        composer.fill("How many euros is the fine for circumventing a technological measure in Germany?")
        composer.press("Enter")
        refusal = chat.locator("li.msg-assistant").last
        expect(refusal).to_have_attribute("aria-busy", "false", timeout=60_000)
        expect(refusal).to_have_class(re.compile(r"msg-no-evidence"))
        expect(refusal.locator("ol.citations:not(.related)")).to_have_count(0)
        expect(refusal.get_by_text("Related, but they do not answer this:")).to_be_visible()
        closest = refusal.get_by_role("list", name="Related passages").get_by_role("link").first
        expect(closest).to_have_text(re.compile(r"^DMCA summary · p\. \d+"))
        expect(closest).to_have_attribute("aria-label", re.compile(r"^Related passage 1: DMCA summary"))
        closest.click()
        expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
        expect(viewer.locator(".viewer-title")).to_contain_text("DMCA summary")
        page.get_by_role("dialog", name="Cited evidence").get_by_role("button", name="Close").click()
        page.reload()
        expect(page.locator("#panel-chat li.msg-assistant").last.get_by_role("list", name="Related passages")
               .get_by_role("link").first).to_have_text(re.compile(r"^DMCA summary · p\. \d+"))
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Library").click()
        expect(page.get_by_role("row", name=re.compile(r"Law and topology \(desktop\)"))).to_contain_text("Ready")
        shot(page, "library")
