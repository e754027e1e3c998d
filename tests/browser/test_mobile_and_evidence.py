"""A 375 px phone: the "Create notebook" dialog fits the screen, and each notebook tab keeps its own
scroll position. The standalone evidence page: the cited document's title in the window title and
its heading, the locator, breadcrumbs back to the notebook and the library, a link to the
original, and a clear message when the evidence is not there or not the reader's to see."""
from __future__ import annotations

import re

import pytest
from browser_support import sign_in_with_token
from playwright.sync_api import Page, expect

PHONE = {"width": 375, "height": 740}
NOT_FOUND = r"status of 404"  # Chromium logs every failed fetch; these pages are meant to cause one


@pytest.fixture(scope="module")
def dmca_notebook(service) -> dict:  # type: ignore[no-untyped-def]
    """A private notebook of the DMCA summary, indexed, with one answered question, and the
    evidence of a cited PDF page."""
    api = service.deployment.api
    notebook_id = api.create(["dmca", "geotopo", "damaged"], title="Takedown notes")
    assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    status, events = api.chat({"notebook_id": notebook_id, "message": "What happens under the notice and takedown procedure?"})
    assert status == 200 and events[-1][0] == "done", events
    citation = next(c for c in events[-1][1]["citations"] if c["resource_id"] == "dmca" and c["locator"].get("page"))
    return {"id": notebook_id, "title": "Takedown notes", "citation": citation}


def outside(page: Page, selector: str) -> list[str]:
    """Visible elements under `selector` (and it) not wholly inside both the viewport's width and
    the element itself, and any sideways scrolling of it or of the page."""
    return page.evaluate(
        """(selector) => {
          const root = document.querySelector(selector);
          const box = root.getBoundingClientRect();
          const width = document.documentElement.clientWidth;
          const bad = [];
          for (const element of [root, ...root.querySelectorAll('*')]) {
            const rect = element.getBoundingClientRect();
            if (!element.checkVisibility() || rect.width === 0) continue;
            const name = `${element.tagName.toLowerCase()}${element.name ? `[name=${element.name}]` : ''}${element.dataset.facet ? `[facet=${element.dataset.facet}]` : ''}`;
            if (rect.left < -0.5 || rect.right > width + 0.5) bad.push(`${name} ${Math.round(rect.left)}..${Math.round(rect.right)} outside the viewport`);
            else if (rect.left < box.left - 0.5 || rect.right > box.right + 0.5) bad.push(`${name} ${Math.round(rect.left)}..${Math.round(rect.right)} outside the dialog ${Math.round(box.left)}..${Math.round(box.right)}`);
          }
          if (root.scrollWidth > root.clientWidth) bad.push(`the dialog scrolls sideways: ${root.scrollWidth} > ${root.clientWidth}`);
          const page = document.scrollingElement.scrollWidth;
          if (page > width) bad.push(`the page scrolls sideways: ${page} > ${width}`);
          return bad;
        }""",
        selector,
    )


def test_the_create_dialog_fits_a_375px_phone(service, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    page = open_page("mobile")
    page.set_viewport_size(PHONE)
    sign_in_with_token(page, service, service.alice_token)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="References").click()
    page.get_by_label("Select DMCA summary").check()
    page.get_by_role("button", name="Create notebook").click()
    dialog = page.get_by_role("dialog", name="Create notebook")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("listitem")).to_have_count(4)
    expect(dialog.get_by_label("Type").locator("option")).not_to_have_count(1)  # the facets are filled in
    dialog.get_by_label("Visibility").select_option("workspace")  # the longest option
    dialog.get_by_label("Conversation").select_option("shared")
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= PHONE["width"]
    assert outside(page, "dialog[data-role=create-dialog]") == []
    controls = dialog.locator("input, select, textarea, button, summary, a")
    assert controls.count() >= 10
    for index in range(controls.count()):
        control = controls.nth(index)
        if not control.is_visible():
            continue
        control.scroll_into_view_if_needed()
        box = control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (
            control.evaluate("(e) => e.outerHTML.slice(0, 120)"), box,
        )
    shot(page, "create-dialog-mobile")


def test_each_mobile_tab_keeps_its_own_scroll_position(service, open_page, dmca_notebook) -> None:  # type: ignore[no-untyped-def]
    page = open_page("mobile")
    page.set_viewport_size(PHONE)
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{dmca_notebook['id']}")
    chat_tab, sources_tab = page.get_by_role("tab", name="Chat"), page.get_by_role("tab", name="Sources")
    expect(chat_tab).to_have_attribute("aria-selected", "true")  # indexed: the chat comes first
    answer = page.locator("#panel-chat li.msg-assistant")
    expect(answer.locator("ol.citations a").first).to_be_visible()
    page.wait_for_timeout(300)  # the transcript scrolled its last answer into view
    scroll_y = "() => Math.round(window.scrollY)"
    max_y = "() => document.scrollingElement.scrollHeight - window.innerHeight"
    chat_y = page.evaluate(scroll_y)
    assert chat_y > 50, "the chat starts at its newest answer, well below the top"

    sources_tab.click()
    expect(page.locator("#panel-sources .source-item")).to_have_count(3)
    assert page.evaluate(scroll_y) == 0, "a tab opened for the first time shows its top"
    assert page.evaluate(max_y) > 150, "the sources tab must be longer than the screen for this test"
    page.evaluate("() => window.scrollTo(0, 120)")
    page.wait_for_function("() => Math.round(window.scrollY) === 120")

    chat_tab.click()
    expect(page.locator("#panel-chat")).to_be_visible()
    assert page.evaluate(scroll_y) == chat_y, "back where the chat was left"

    chat_tab.press("ArrowLeft")  # the keyboard switches tabs the same way
    expect(sources_tab).to_be_focused()
    expect(sources_tab).to_have_attribute("aria-selected", "true")
    assert page.evaluate(scroll_y) == 120, "back where the sources were left"

    sources_tab.click()  # tapping the current tab again goes to its top, as in native tab bars
    assert page.evaluate(scroll_y) == 0


def evidence_path(notebook_id: str, chunk_id: str, revision_id: str) -> str:
    return f"/notebooks/{notebook_id}/evidence/{chunk_id}?revision={revision_id}"


def test_the_evidence_page_names_the_document_and_leads_back(service, open_page, dmca_notebook, shot) -> None:  # type: ignore[no-untyped-def]
    notebook_id, citation = dmca_notebook["id"], dmca_notebook["citation"]
    cited_page = citation["locator"]["page"]
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, evidence_path(notebook_id, citation["chunk_id"], citation["revision_id"]))
    viewer = page.locator("[data-role=viewer]")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(page).to_have_title(f"DMCA summary · page {cited_page} · Grounded notebooks")
    expect(page.get_by_role("heading", level=1)).to_have_text("DMCA summary")
    expect(page.locator("[data-role=evidence-locator]")).to_have_text(f"Page {cited_page}")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs.get_by_role("link", name="Library")).to_have_attribute("href", "/notebooks")
    expect(crumbs.get_by_text("DMCA summary")).to_have_attribute("aria-current", "page")

    original = page.get_by_role("link", name="Download the original PDF")
    href = original.get_attribute("href")
    assert re.fullmatch(
        rf"/api/notebooks/{notebook_id}/sources/[^/?#]+/file\?revision={citation['revision_id']}#page={cited_page}", href
    ), href
    download = page.request.get(service.base_url + href.split("#")[0])
    assert download.ok and download.body()[:5] == b"%PDF-"
    shot(page, "evidence-page")

    crumbs.get_by_role("link", name="Takedown notes").click()
    expect(page).to_have_url(f"{service.base_url}/notebooks/{notebook_id}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Takedown notes")


def test_missing_or_forbidden_evidence_says_so(service, open_page, dmca_notebook, shot) -> None:  # type: ignore[no-untyped-def]
    notebook_id, citation = dmca_notebook["id"], dmca_notebook["citation"]
    page = open_page("mobile", expected_errors=NOT_FOUND)
    sign_in_with_token(page, service, service.alice_token, evidence_path(notebook_id, "no-such-chunk", citation["revision_id"]))
    expect(page.get_by_role("alert").filter(has_text="This passage is not in that revision of the notebook")).to_be_visible()
    expect(page).to_have_title("Evidence not found · Grounded notebooks")
    expect(page.get_by_role("heading", level=1)).to_have_text("Evidence not found")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs.get_by_role("link", name="Takedown notes")).to_have_attribute("href", f"/notebooks/{notebook_id}")
    expect(page.locator("[data-role=viewer]")).to_have_attribute("data-state", "error")
    shot(page, "evidence-not-found-mobile")

    # A reader who may not see the (private) notebook learns nothing about it, not even its title.
    stranger = open_page("desktop", expected_errors=NOT_FOUND)
    sign_in_with_token(stranger, service, service.viewer_token, evidence_path(notebook_id, citation["chunk_id"], citation["revision_id"]))
    expect(stranger.get_by_role("alert").filter(has_text="The notebook does not exist, or it is not shared with you.")).to_be_visible()
    expect(stranger).to_have_title("Evidence not found · Grounded notebooks")
    expect(stranger.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Notebook")).to_have_attribute(
        "href", f"/notebooks/{notebook_id}"
    )
    expect(stranger.get_by_text("Takedown notes")).to_have_count(0)
