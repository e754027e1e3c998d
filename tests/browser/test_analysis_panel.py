"""The notebook page's Analyses panel in a real browser (issue #16): start a timeline from the
panel, watch its progress, read its points in the server's order and open a citation in the viewer
at the cited page; cancel a running analysis from the panel and delete it; a viewer reads the
analyses but has no control to start, cancel or delete one.

A service of its own, because the analysis batch bounds are read when it starts: `gnosi serve`
with its embedded worker (it consumes every queue, `analysis` included), small bounds so that an
analysis of the two PDFs (about 230 chunks) takes some eighty steps over seven levels (progress to
watch, and time for a cancel to land mid-way), and a shared workspace notebook, so that the viewer
sees alice's analyses.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from browser_support import Service, sign_in_with_token
from playwright.sync_api import Locator, Page, expect
from support.live import Api, deployment
from support.vault import VaultBuilder

from pipeline.analysis.offline import MIN_BATCH_CHARS

ENDED = ("succeeded", "failed", "cancelled")
ANALYSIS_TIMEOUT_S = 180
SETTINGS = {
    # Six chunks a step: about forty map steps of three points each, reduced two summaries at a
    # time over six more levels to a result of three points.
    "GNOSI_ANALYSIS_BATCH_CHUNKS": "6",
    "GNOSI_ANALYSIS_BATCH_CHARS": str(MIN_BATCH_CHARS),
}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, str]]:
    """The service, and a shared workspace notebook of the DMCA summary and lecture notes."""
    tmp = tmp_path_factory.mktemp("analyses")
    vault = VaultBuilder(tmp / "vault")
    vault.record("dmca", "DMCA summary", file=vault.attach_corpus("pdf/dmca.pdf"), kind="report")
    vault.record("geotopo", "Géométrie et topologie", file=vault.attach_corpus("pdf/GeoTopo-komprimiert.pdf"), kind="lecture notes")
    with ExitStack() as stack:
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, redis=False, **SETTINGS))
        d.start_web()
        viewer = d.user("victor", "viewer")
        created = d.api.post("/api/notebooks", {
            "title": "Law and topology", "visibility": "workspace", "conversation_mode": "shared",
            "resource_ids": ["dmca", "geotopo"],
        })
        assert created.status_code == 201, created.text
        notebook_id = created.json()["id"]
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded", detail
        yield Service(
            deployment=d, base_url=str(d.api.http.base_url).rstrip("/"), alice_token=d.token,
            viewer_token=viewer.http.headers["Authorization"].split()[1], reading_table_id="",
        ), notebook_id


def read_analysis(service: Service, notebook_id: str, analysis_id: str) -> dict[str, Any]:
    shown = service.deployment.api.get(f"/api/notebooks/{notebook_id}/analyses/{analysis_id}")
    assert shown.status_code == 200, shown.text
    return shown.json()


def wait_for_end(service: Service, notebook_id: str, analysis_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + ANALYSIS_TIMEOUT_S
    while (shown := read_analysis(service, notebook_id, analysis_id))["state"] not in ENDED:
        assert time.monotonic() < deadline, f"analysis did not end: {shown}"
        time.sleep(0.3)
    return shown


def open_notebook(page: Page, service: Service, token: str, notebook_id: str) -> Locator:
    sign_in_with_token(page, service, token, f"/notebooks/{notebook_id}")
    panel = page.get_by_role("region", name=re.compile(r"^Analyses"))
    expect(panel.get_by_role("list", name="Analyses of this notebook")).to_be_visible()
    return panel


def start_from_panel(panel: Locator, kind: str, instruction: str = "") -> Locator:
    """Start an analysis with the panel's form; the list item it shows first (the newest)."""
    panel.get_by_label("Kind").select_option(label=kind)
    panel.get_by_label("Instruction (optional)").fill(instruction)
    before = panel.locator("li.analysis").count()
    panel.get_by_role("button", name="Start analysis").click()
    expect(panel.locator("li.analysis")).to_have_count(before + 1)
    item = panel.locator("li.analysis").first
    expect(item.locator(".analysis-kind")).to_have_text(kind)
    return item


def watch_status(page: Page, item: Locator) -> list[str]:
    """Every distinct status line the item shows until its analysis ended (it may be quick)."""
    status = item.locator("[data-role=analysis-status] p")
    seen: list[str] = []
    deadline = time.monotonic() + ANALYSIS_TIMEOUT_S
    while item.get_attribute("data-state") not in ENDED:
        assert time.monotonic() < deadline, f"the panel never showed the end; seen: {seen}"
        text = (status.text_content() or "").strip()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        page.wait_for_timeout(100)
    return seen


def test_a_timeline_started_from_the_panel_shows_progress_then_points_that_open_the_viewer(analysed, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = analysed
    page = open_page("desktop")
    panel = open_notebook(page, service, service.alice_token, notebook_id)
    expect(panel.get_by_text("No analyses yet.")).to_be_visible()
    item = start_from_panel(panel, "Timeline", "dates and deadlines")
    expect(item.locator(".analysis-instruction")).to_have_text("“dates and deadlines”")
    expect(panel.locator("[data-role=analysis-announce]")).to_have_attribute("role", "status")
    seen = watch_status(page, item)
    assert any(re.match(r"(Waiting for a worker|Planning|Reading the sources: \d+ of \d+ batches|Combining summaries)", text) for text in seen), seen
    expect(item).to_have_attribute("data-state", "succeeded")
    expect(item.locator("[data-role=analysis-state]")).to_have_text("Done")
    expect(item.get_by_role("button", name="Cancel")).to_have_count(0)

    # Started here: its result opens by itself, the points in the order the server gave them.
    analysis_id = item.get_attribute("data-analysis-id")
    result = read_analysis(service, notebook_id, analysis_id)["result"]
    assert result["points"], result
    toggle = item.get_by_role("button", name="Hide result")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    points = item.get_by_role("list", name="Timeline: points").locator(":scope > li")
    expect(points).to_have_count(len(result["points"]))
    expect(points.locator(".point-text")).to_have_text([point["text"] for point in result["points"]])
    expect(item.locator(".point-removed-note")).to_have_count(0)
    shot(page, "analysis-result")

    # A citation opens the viewer as a chat citation does: the cited document at the cited page.
    number, point = next((n, p) for n, p in enumerate(result["points"]) if p["citations"])
    cited = point["citations"][0]
    page_number = cited["locator"]["page"]
    link = points.nth(number).get_by_role("list", name="Citations").get_by_role("link").first
    expect(link).to_have_text(f"{cited['title']} · p. {page_number}")
    expect(link).to_have_attribute("href", re.compile(rf"/notebooks/{notebook_id}/evidence/{cited['chunk_id']}\?"))
    link.click()
    dialog = page.get_by_role("dialog", name="Cited evidence")
    viewer = dialog.locator("[data-role=viewer]")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(viewer.locator(".viewer-title")).to_contain_text(cited["title"])
    expect(viewer.locator("[data-role=viewer-page-number]")).to_have_text(re.compile(rf"^Page {page_number} of \d+$"))
    expect(viewer.locator(f".pdf-page[data-page-number='{page_number}']")).to_have_attribute("data-highlighted", "true")
    shot(page, "analysis-citation")
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()

    toggle.click()  # the result folds away and opens again
    expect(item.get_by_role("button", name="Show result")).to_have_attribute("aria-expanded", "false")
    expect(points.first).to_be_hidden()
    item.get_by_role("button", name="Show result").click()
    expect(points).to_have_count(len(result["points"]))


def test_an_analysis_cancelled_from_the_panel_ends_cancelled_and_can_be_deleted(analysed, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = analysed
    page = open_page("desktop")
    panel = open_notebook(page, service, service.alice_token, notebook_id)
    item = start_from_panel(panel, "Summary")
    analysis_id = item.get_attribute("data-analysis-id")
    with page.expect_response(lambda response: response.url.endswith(f"/analyses/{analysis_id}/cancel")) as cancelled:
        item.get_by_role("button", name="Cancel").click()
    assert cancelled.value.status == 200 and cancelled.value.json()["state"] in ("cancelling", "cancelled")
    expect(item).to_have_attribute("data-state", re.compile(r"^(cancelling|cancelled)$"))
    expect(item.get_by_role("button", name="Cancel")).to_have_count(0)
    expect(item).to_have_attribute("data-state", "cancelled", timeout=60_000)  # the panel polls until it ended
    expect(item.locator("[data-role=analysis-state]")).to_have_text("Cancelled")
    expect(item.get_by_role("button", name="Show result")).to_have_count(0)
    shown = read_analysis(service, notebook_id, analysis_id)
    assert shown["state"] == "cancelled" and shown["result"] is None, shown

    item.get_by_role("button", name="Delete this summary").click()
    page.get_by_role("dialog", name="Are you sure?").get_by_role("button", name="Confirm").click()
    expect(panel.locator(f"li[data-analysis-id='{analysis_id}']")).to_have_count(0)
    assert service.deployment.api.get(f"/api/notebooks/{notebook_id}/analyses/{analysis_id}").status_code == 404


def test_a_viewer_reads_the_analyses_but_cannot_start_cancel_or_delete_one(analysed, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    """Last in this module: it removes the DMCA summary from the notebook."""
    service, notebook_id = analysed
    api = service.deployment.api
    base = f"/api/notebooks/{notebook_id}"
    dmca = [source["id"] for source in api.get(f"{base}/chat-sources").json()["sources"] if source["resource_id"] == "dmca"]
    started = api.post(f"{base}/analyses", {"kind": "faq", "source_ids": dmca})  # one PDF: a short run
    assert started.status_code == 202, started.text
    finished = wait_for_end(service, notebook_id, started.json()["id"])
    assert finished["state"] == "succeeded" and finished["result"]["points"], finished

    page = open_page("desktop")
    panel = open_notebook(page, service, service.viewer_token, notebook_id)
    item = panel.locator(f"li[data-analysis-id='{finished['id']}']")
    expect(item).to_have_attribute("data-state", "succeeded")
    expect(panel.locator("[data-role=analysis-note]")).to_have_text("Viewers can read these analyses but not start, cancel or delete one.")
    expect(panel.get_by_role("button", name="Start analysis")).to_have_count(0)
    expect(panel.get_by_role("textbox")).to_have_count(0)
    expect(panel.get_by_role("combobox")).to_have_count(0)
    item.get_by_role("button", name="Show result").click()
    points = item.get_by_role("list", name="FAQ: points").locator(":scope > li")
    expect(points).to_have_count(len(finished["result"]["points"]))
    expect(item.get_by_role("link").first).to_be_visible()
    # The server says the viewer may manage none (can_manage), and the panel shows no action for it.
    as_viewer = Api(service.base_url, service.viewer_token).get(f"{base}/analyses").json()
    assert not as_viewer["can_start"] and not any(a["can_manage"] for a in as_viewer["items"])
    expect(panel.get_by_role("button", name=re.compile(r"^(Cancel|Delete)"))).to_have_count(0)

    # The resource its points rest on leaves the notebook: they stay readable, marked, citing nothing.
    assert api.delete(f"{base}/sources/dmca").status_code == 204
    page.reload()
    item.get_by_role("button", name="Show result").click()
    expect(points).to_have_count(len(finished["result"]["points"]))
    expect(points.locator(".point-removed-note")).to_have_count(len(finished["result"]["points"]))
    expect(points.first.locator(".point-removed-note")).to_have_text(re.compile(r"^Based on a removed source"))
    expect(item.get_by_role("link")).to_have_count(0)
    shot(page, "analysis-removed-source")
