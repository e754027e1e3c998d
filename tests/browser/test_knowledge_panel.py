"""The notebook page's Knowledge panel in a real browser (issue #20 item 7): make a source note of
a PDF from the panel and watch its job, open its table of contents and a note, click a claim's
page and land in the viewer on that page with the passage marked; the concepts two halves of one
report share are listed and read with their sources, beside the changes they followed; a viewer
reads but has no form.

`gnosi serve` with its embedded worker (it consumes every queue, the knowledge stages' included),
a shared workspace notebook of the two halves of dmca.pdf.
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
from support.live import deployment
from support.vault import VaultBuilder

JOB_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, str]]:
    tmp = tmp_path_factory.mktemp("knowledge")
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_pages_record("first", "dmca.pdf", range(0, 9), title="The DMCA, first half")
    vault.pdf_pages_record("second", "dmca.pdf", range(9, 18), title="The DMCA, second half")
    with ExitStack() as stack:
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, redis=False))
        d.start_web()
        viewer = d.user("victor", "viewer")
        created = d.api.post("/api/notebooks", {"title": "The DMCA", "visibility": "workspace", "resource_ids": ["first", "second"]})
        assert created.status_code == 201, created.text
        notebook_id = created.json()["id"]
        assert d.api.wait_for_job(notebook_id, timeout=240)["job"]["state"] == "succeeded"
        yield Service(
            deployment=d, base_url=str(d.api.http.base_url).rstrip("/"), alice_token=d.token,
            viewer_token=viewer.http.headers["Authorization"].split()[1], reading_table_id="",
        ), notebook_id


def open_panel(page: Page, service: Service, token: str, notebook_id: str) -> Locator:
    sign_in_with_token(page, service, token, f"/notebooks/{notebook_id}")
    panel = page.get_by_role("region", name="Knowledge")
    expect(panel.get_by_role("list", name="Source notes")).to_be_visible()
    return panel


def make_source_note(panel: Locator, title: str) -> Locator:
    panel.get_by_label("PDF").select_option(label=title)
    panel.get_by_role("button", name="Make a source note").click()
    item = panel.get_by_role("list", name="Source notes").locator("li", has_text=re.compile(r"dmca-p"))
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while True:
        states = [item.nth(i).get_attribute("data-job-state") for i in range(item.count())]
        if states and all(state and state.startswith("completed") for state in states):
            return item
        assert time.monotonic() < deadline, f"the jobs did not end: {states}"
        time.sleep(0.3)


def concepts(service: Service, notebook_id: str) -> list[dict[str, Any]]:
    return service.deployment.api.get(f"/api/notebooks/{notebook_id}/knowledge/concepts").json()["items"]


def test_a_claim_of_a_source_note_opens_its_page_and_concepts_show_their_sources(halves, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = halves
    page = open_page("desktop")
    panel = open_panel(page, service, service.alice_token, notebook_id)
    expect(panel.get_by_text("No source note yet.")).to_be_visible()
    make_source_note(panel, "The DMCA, first half")
    items = make_source_note(panel, "The DMCA, second half")
    expect(items).to_have_count(2)
    expect(items.first.locator("[data-role=knowledge-job]")).to_have_text(re.compile(r"^ready(, with coverage notes)? · \d+ of \d+ notes$"))

    items.first.get_by_role("button").click()
    reader = panel.locator("[data-role=knowledge-reader]")
    contents = reader.get_by_role("list", name="Contents")
    expect(contents.locator("li").first).to_be_visible()
    expect(reader.get_by_role("link", name="Download as Markdown")).to_have_attribute("href", re.compile(r"/markdown$"))
    contents.locator("li button").first.click()
    claim_page = reader.locator("[data-role=knowledge-claims] button.cite").first
    expect(claim_page).to_be_visible()
    page_number = claim_page.get_attribute("data-page")
    shot(page, "knowledge-note")
    claim_page.click()
    beside = panel.get_by_role("region", name="The cited page")  # a wide screen: the page opens beside the note
    viewer = beside.locator("[data-role=viewer]")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(viewer.locator("[data-role=viewer-page-number]")).to_have_text(re.compile(rf"^Page {page_number} of 9$"))
    expect(viewer.locator(f".pdf-page[data-page-number='{page_number}']")).to_have_attribute("data-highlighted", "true")
    expect(page.get_by_role("dialog", name="Cited evidence")).to_be_hidden()
    expect(claim_page).to_be_visible()  # the note stays readable beside its page
    reader_box, viewer_box = reader.bounding_box(), beside.bounding_box()
    assert reader_box and viewer_box and viewer_box["x"] >= reader_box["x"] + reader_box["width"] - 1, (reader_box, viewer_box)
    shot(page, "knowledge-claim-page")
    beside.get_by_role("button", name="Close").click()
    expect(beside).to_be_hidden()

    deadline = time.monotonic() + JOB_TIMEOUT_S  # the concepts follow the second source note's event
    while not any(c["source_version_count"] == 2 and c["state"] == "active" for c in concepts(service, notebook_id)):
        assert time.monotonic() < deadline, "no concept shared by both halves"
        time.sleep(0.5)
    page.reload()
    panel = page.get_by_role("region", name="Knowledge")
    shared = next(c for c in concepts(service, notebook_id) if c["source_version_count"] == 2)
    panel.get_by_role("list", name="Concepts").get_by_role("button", name=shared["name"], exact=True).click()
    reader = panel.locator("[data-role=knowledge-reader]")
    expect(reader.get_by_role("heading", name=shared["name"])).to_be_visible()
    sources_cited = reader.locator("button.cite")
    expect(sources_cited.first).to_be_visible()
    labels = {re.sub(r", p\. .*$", "", text) for text in sources_cited.all_text_contents()}
    assert labels == {"dmca-p1-9.pdf", "dmca-p10-18.pdf"}, labels
    shot(page, "knowledge-concept")
    changes = panel.get_by_role("list", name="Recent changes the concepts followed").locator(":scope > li")
    expect(changes).to_have_count(2)  # each source note's publication, newest first
    expect(changes.first).to_have_attribute("data-kind", "note_published")
    expect(changes.first).to_have_attribute("data-state", "done")
    expect(changes.first).to_contain_text(re.compile(r"Source note published\s*[1-9]\d* concepts? changed"))


def test_a_viewer_reads_the_knowledge_but_has_no_form(halves, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = halves
    source_notes(service, notebook_id)
    page = open_page("mobile")
    sign_in_with_token(page, service, service.viewer_token, f"/notebooks/{notebook_id}")
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Ready")  # the page set its tabs up
    page.get_by_role("tab", name="Knowledge").click()
    panel = page.get_by_role("region", name="Knowledge")
    expect(panel.get_by_role("list", name="Source notes").locator("li").first).to_be_visible()
    expect(panel.get_by_role("button", name="Make a source note")).to_be_hidden()
    width = page.viewport_size["width"]
    assert panel.evaluate("(section) => section.getBoundingClientRect().right") <= width
    panel.get_by_role("list", name="Source notes").locator("li button").first.click()  # a narrow screen: the dialog
    reader = panel.locator("[data-role=knowledge-reader]")
    reader.get_by_role("list", name="Contents").locator("li button").first.click()
    reader.locator("[data-role=knowledge-claims] button.cite").first.click()
    dialog = page.get_by_role("dialog", name="Cited evidence")
    expect(dialog.locator("[data-role=viewer]")).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(panel.get_by_role("region", name="The cited page")).to_be_hidden()


def source_notes(service: Service, notebook_id: str) -> list[dict[str, Any]]:
    """Both halves' source notes, made through the API where an earlier test has not made them."""
    api, base = service.deployment.api, f"/api/notebooks/{notebook_id}/knowledge"
    for resource_id in ("first", "second"):
        added = api.post(f"{base}/sources", {"resource_id": resource_id})
        assert added.status_code in (200, 202), added.text
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while True:
        items = api.get(f"{base}/sources").json()["items"]
        if all((s["active_version"]["job"]["state"] or "").startswith("completed") for s in items):
            return items
        assert time.monotonic() < deadline, items
        time.sleep(0.5)


def test_a_person_approves_or_declines_the_agents_edits_and_edits_a_block_themselves(halves, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = halves
    api, base = service.deployment.api, f"/api/notebooks/{notebook_id}/knowledge"
    first = source_notes(service, notebook_id)[0]
    toc = api.get(f"{base}/source-notes/{first['active_version']['source_note_version_id']}").json()["toc"]
    note = api.get(f"{base}/notes/{toc[0]['note_id']}").json()
    assert len(note["blocks"]) >= 2, note["blocks"]
    asked = {}
    for block, text in zip(note["blocks"], ["The agent's clearer wording.", "A change the person declines."]):
        approval = api.post(f"{base}/approvals", {"action": "edit_block", "params": {
            "note_id": note["id"], "expected_version_id": note["version"]["id"], "block_key": block["key"], "text": text}})
        assert approval.status_code == 201, approval.text  # the agent's token asks, as its tool does
        asked[text] = approval.json()["id"]

    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    waiting = page.get_by_role("region", name="Edits waiting for your approval")
    expect(waiting.locator("li.approval")).to_have_count(2)
    declined = waiting.locator(f"li[data-approval-id='{asked['A change the person declines.']}']")
    expect(declined.locator("del")).to_have_text(note["blocks"][1]["text"])
    shot(page, "knowledge-approvals")
    declined.get_by_role("button", name="Decline").click()
    expect(waiting.locator("li.approval")).to_have_count(1)
    waiting.get_by_role("button", name="Approve").click()
    expect(waiting).to_be_hidden()
    approved = api.get(f"{base}/notes/{note['id']}").json()
    assert approved["blocks"][0]["text"] == "The agent's clearer wording." and approved["version"]["author"].startswith("agent:")
    assert approved["blocks"][1]["text"] == note["blocks"][1]["text"], "the declined edit changed nothing"

    panel = page.get_by_role("region", name="Knowledge")
    panel.get_by_role("list", name="Source notes").get_by_role("button", name=first["label"]).click()
    panel.locator("[data-role=knowledge-reader]").get_by_role("list", name="Contents").locator("li button").first.click()
    reader = panel.locator("[data-role=knowledge-reader]")
    second = reader.locator(f".knowledge-block[data-block-key='{note['blocks'][1]['key']}']")
    second.get_by_role("button", name=re.compile("^Edit this block")).click()
    editor = reader.locator(f"form[data-block-key='{note['blocks'][1]['key']}']")
    editor.get_by_label("Block text").fill("A sentence the person wrote.")
    editor.get_by_role("button", name="Save").click()
    expect(second).to_contain_text("A sentence the person wrote. (revised by a person)")
    expect(reader.locator(f".knowledge-block[data-block-key='{note['blocks'][0]['key']}']")).to_contain_text("The agent's clearer wording.")
    edited = api.get(f"{base}/notes/{note['id']}").json()
    assert edited["version"]["number"] == approved["version"]["number"] + 1 and edited["blocks"][1]["human_revised"], edited


def test_a_question_to_the_notes_cites_a_page_that_opens_in_the_viewer(halves, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = halves
    source_notes(service, notebook_id)
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    chat = page.locator("#panel-chat")
    chat.get_by_role("radio", name="the notes").check()
    composer = chat.get_by_label("Ask a question about the sources")
    expect(composer).to_have_attribute("placeholder", "Ask your notes, or ask to improve one")
    composer.fill("Which service providers does the DMCA limit the liability of for transmitting material?")
    composer.press("Enter")
    answer = chat.locator("li.msg-assistant").last
    citation = answer.locator("ol.citations a").first
    expect(citation).to_be_visible(timeout=60_000)
    cited_page = re.search(r"p\. (\d+)", citation.inner_text()).group(1)
    citation.click()
    viewer = page.get_by_role("dialog", name="Cited evidence").locator("[data-role=viewer]")
    expect(viewer).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(viewer.locator("[data-role=viewer-page-number]")).to_have_text(re.compile(rf"^Page {cited_page} of 9$"))
    page.get_by_role("dialog", name="Cited evidence").get_by_role("button", name="Close").click()
    page.reload()
    expect(page.locator("#panel-chat").get_by_role("radio", name="the notes")).to_be_checked()
