"""Progress naming the resource in work, the creator's Cancel, the read-only transcript viewers
get, and the bulk action that exists only on the configured References table."""
from __future__ import annotations

import re

from browser_support import sign_in_with_token
from playwright.sync_api import expect


def test_progress_names_the_resource_and_the_creator_can_cancel(service, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    notebook_id = api.create(["slow-web"], title="Slow web page")
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    progress = page.get_by_role("status").filter(has=page.locator("progress"))
    expect(progress).to_contain_text(re.compile(r"Indexing 0 of 1 · now: (A slow web page|slow-web)"), timeout=30_000)
    expect(page.locator("#panel-chat [data-role=chat-note]")).to_have_text("Chat opens once at least one source is indexed.")
    expect(page.get_by_role("textbox", name="Ask a question about the sources")).to_be_disabled()
    shot(page, "notebook-progress")
    page.get_by_role("button", name="Cancel").click()
    note = page.locator("[data-role=job-note]")
    expect(note).to_contain_text("was cancelled", timeout=90_000)
    expect(note).to_contain_text("Chat stays blocked until a refresh succeeds.")
    expect(progress).to_be_hidden()
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Cancelled before the first index")


def test_a_viewer_gets_a_read_only_transcript(service, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    created = api.post(
        "/api/notebooks",
        {"title": "Shared DMCA notes", "visibility": "workspace", "conversation_mode": "shared", "resource_ids": ["dmca"]},
    )
    assert created.status_code == 201, created.text
    notebook_id = created.json()["id"]
    assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    status, events = api.chat({"notebook_id": notebook_id, "message": "What is the notice and takedown procedure?"})
    assert status == 200 and events[-1][0] == "done", events

    page = open_page("desktop")
    sign_in_with_token(page, service, service.viewer_token, f"/notebooks/{notebook_id}")
    chat = page.locator("#panel-chat")
    expect(chat.get_by_text("What is the notice and takedown procedure?")).to_be_visible()
    expect(chat.locator("li.msg-user .msg-author")).to_have_text("alice")
    expect(chat.locator("a.cite").first).to_be_visible()
    expect(chat.locator("[data-role=chat-note]")).to_contain_text("Read-only transcript")
    expect(chat.locator("[data-role=composer]")).to_have_count(0)
    expect(chat.get_by_role("textbox")).to_have_count(0)
    for action in ("Send", "Retry", "Edit", "Rewind", "Clear conversation"):
        expect(page.get_by_role("button", name=action)).to_have_count(0)
    for owner_action in ("Refresh", "Add sources", "Cancel", "Save settings", "Delete notebook"):
        expect(page.get_by_role("button", name=owner_action)).to_have_count(0)
    expect(page.locator("#panel-sources").get_by_role("button")).to_have_count(0)
    expect(page.get_by_label("Title")).to_be_disabled()
    shot(page, "read-only-transcript")


def test_the_bulk_action_exists_only_on_the_references_table(service, open_page) -> None:  # type: ignore[no-untyped-def]
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/tables/{service.reading_table_id}")
    expect(page.get_by_role("heading", name="Reading list")).to_be_visible()
    expect(page.get_by_role("row", name=re.compile("DMCA again"))).to_be_visible()
    expect(page.get_by_role("button", name="Create notebook")).to_have_count(0)
    expect(page.get_by_role("checkbox")).to_have_count(0)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="References").click()
    expect(page.get_by_role("heading", name="References")).to_be_visible()
    expect(page.get_by_role("button", name="Create notebook")).to_be_disabled()
    expect(page.locator("[data-role=records-summary]")).to_have_text(
        "7 records · 3 cannot be chosen (the reason is beside each)"
    )
    for title, reason in (
        ("An empty record", "No attachment or URL"),
        ("Template", "Template (template: true): never offered; a copy must drop that line"),
        ("A private address", "URL not fetched: a private, loopback or non-http(s) address (GNOSI_URL_ALLOWLIST"),
    ):
        excluded = page.get_by_role("row", name=re.compile(f"^{title}"))
        expect(excluded).to_contain_text(reason)
        expect(excluded.get_by_role("checkbox")).to_have_count(0)

    page.get_by_label("Select DMCA summary").check()
    page.get_by_role("button", name="Create notebook").click()
    dialog = page.get_by_role("dialog", name="Create notebook")
    expect(dialog.get_by_text(re.compile(
        r"3 records omitted: 1 × Template \(template: true\).*; 1 × URL not fetched.*GNOSI_URL_ALLOWLIST.*; "
        r"1 × No attachment or URL\."
    ))).to_be_visible()
    dialog.get_by_label("Type").select_option(label="report (1)")
    expect(dialog.get_by_role("listitem")).to_have_count(1)
    expect(dialog.get_by_role("checkbox", name=re.compile("DMCA summary"))).to_be_checked()
    dialog.get_by_label("Type").select_option("")
    dialog.get_by_label("Search").fill("geometrie")  # accent-insensitive
    expect(dialog.get_by_role("listitem")).to_have_count(1)
    expect(dialog.get_by_text("Géométrie et topologie")).to_be_visible()
    expect(dialog.get_by_text("(1 selected)")).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()


def test_the_creator_adds_cancels_removes_and_retries(service, open_page) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    notebook_id = api.create(["dmca"], title="Managed")
    assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    sources = page.locator("#panel-sources")
    dmca = sources.locator(".source-item[data-resource-id=dmca]")
    expect(dmca).to_have_attribute("data-state", "available")

    sources.get_by_role("button", name="Add sources").click()
    dialog = page.get_by_role("dialog", name="Add sources")
    member = dialog.get_by_role("listitem").filter(has_text="DMCA summary")
    expect(member).to_contain_text("In this notebook")
    expect(member.get_by_role("checkbox")).to_be_checked()
    expect(member.get_by_role("checkbox")).to_be_disabled()
    dialog.get_by_label("Search").fill("slow")
    dialog.get_by_role("checkbox", name=re.compile("A slow web page")).check()
    dialog.get_by_role("button", name="Add selected").click()
    expect(dialog).to_be_hidden()
    progress = page.get_by_role("status").filter(has=page.locator("progress"))
    expect(progress).to_contain_text(re.compile(r"now: (A slow web page|slow-web)"), timeout=30_000)
    expect(dmca.get_by_role("button", name=re.compile("^Retry"))).to_be_disabled()

    progress.get_by_role("button", name="Cancel").click()
    note = sources.locator("[data-role=job-note]")
    expect(note).to_contain_text("was cancelled", timeout=90_000)
    expect(note).to_contain_text("The previous index stays in use.")
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Ready")

    slow = sources.locator(".source-item[data-resource-id=slow-web]")
    slow.get_by_role("button", name=re.compile("^Remove")).click()
    page.get_by_role("dialog", name="Are you sure?").get_by_role("button", name="Confirm").click()
    expect(slow).to_have_count(0)

    retry = dmca.get_by_role("button", name=re.compile("^Retry"))
    expect(retry).to_be_enabled()
    cancelled_job = api.get(f"/api/notebooks/{notebook_id}").json()["job"]["id"]
    retry.click()
    expect(note).to_contain_text("Retrying")
    api.wait_until(notebook_id, lambda nb: nb["job"]["id"] != cancelled_job and nb["job"]["state"] == "succeeded")
    expect(note).to_be_hidden(timeout=30_000)  # the failure note of the cancelled job is gone
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Ready")
    expect(dmca).to_have_attribute("data-state", "available")


def test_a_ready_notebook_with_a_failing_resource_says_so(service, open_page) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    notebook_id = api.create(["dmca", "damaged"], title="One of two")
    assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Ready · 1 error")
    damaged = page.locator("#panel-sources .source-item[data-resource-id=damaged]")
    expect(damaged).to_have_attribute("data-state", "error")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Library").click()
    expect(page.get_by_role("row", name=re.compile("One of two"))).to_contain_text("Ready · 1 error")
