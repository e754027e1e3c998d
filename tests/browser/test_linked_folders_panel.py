"""The sources panel's linked folders in a real browser (docs/decisions/0020): the notebook's
creator links a folder on the server through the form (a folder outside the allowed roots is
refused next to the form), its PDF appears among the sources as available, "Sync now" says how
many documents it will check (a second one within the minute is refused), a schedule chosen
persists after a reload, and unlinking takes the folder and its document away.

A service of its own, because the folders a notebook may link are read when it starts
(GNOSI_SYNC_FOLDER_ROOTS): `gnosi serve` with its embedded worker, which runs the sync rounds
(coordinator queue) and the ingestion alike.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from browser_support import Service, sign_in_with_token
from playwright.sync_api import expect
from support.live import deployment
from support.services import CORPUS
from support.vault import VaultBuilder

PDF = "naacl06-shinyama.pdf"
INDEXED_MS = 90_000
# Chromium logs the refused link (FOLDER_NOT_ALLOWED) and the rate-limited sync as console errors.
REFUSED = r"status of (400|429)"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, str, Path]]:
    """The service, a notebook of the DMCA summary (indexed), and a folder under the allowed root."""
    tmp = tmp_path_factory.mktemp("linked")
    team = tmp / "drives" / "team"
    team.mkdir(parents=True)
    shutil.copy(CORPUS / "pdf" / PDF, team / PDF)
    vault = VaultBuilder(tmp / "vault")
    vault.record("dmca", "DMCA summary", file=vault.attach_corpus("pdf/dmca.pdf"), kind="report")
    with ExitStack() as stack:
        d = stack.enter_context(deployment(
            tmp, vault.root, vault.table_id, redis=False, GNOSI_SYNC_FOLDER_ROOTS=str(team.parent),
        ))
        d.start_web()
        notebook_id = d.api.create(["dmca"], title="Followed folders")
        assert d.api.wait_for_job(notebook_id, timeout=120)["job"]["state"] == "succeeded"
        yield Service(
            deployment=d, base_url=str(d.api.http.base_url).rstrip("/"), alice_token=d.token,
            viewer_token="", reading_table_id="",
        ), notebook_id, team


def test_link_sync_schedule_and_unlink_a_folder_from_the_sources_panel(linked, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id, team = linked
    page = open_page("desktop", expected_errors=REFUSED)
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    sources = page.locator("#panel-sources")
    panel = page.get_by_role("region", name="Linked folders")
    folders = panel.get_by_role("list", name="Folders this notebook follows")
    expect(folders.get_by_text("No linked folders.")).to_be_visible()
    expect(panel.get_by_role("button", name="Sync now")).to_be_disabled()

    # The form: a folder outside the allowed roots is refused beside it.
    panel.get_by_text("Link a folder").click()
    form = panel.locator("[data-role=link-form]")
    expect(form.get_by_label("Drive")).to_have_value("folder")
    expect(form.get_by_label("Folder", exact=True)).to_have_accessible_description(re.compile("under the folders the operator allows"))
    form.get_by_label("Folder", exact=True).fill(str(team.parent.parent / "elsewhere"))
    form.get_by_role("button", name="Link folder").click()
    expect(form.get_by_role("alert")).to_contain_text("outside the folders the operator allows")
    expect(folders.locator("li.linked-folder")).to_have_count(0)

    form.get_by_label("Folder", exact=True).fill(str(team))
    form.get_by_label("Sync schedule").select_option(label="Off")
    form.get_by_role("button", name="Link folder").click()
    expect(form.get_by_role("alert")).to_be_hidden()
    item = folders.locator("li.linked-folder")
    expect(item).to_have_count(1)
    expect(item.locator("[data-role=linked-name]")).to_have_text("team")
    expect(item).to_contain_text("Folder on the server")
    expect(item.locator("[data-role=linked-schedule]")).to_have_text("Scheduled sync: off")
    expect(panel.get_by_role("status")).to_have_text("Linked team: its files are being synced.")

    # The sync round downloads the PDF; the panel polls until it is indexed, and the sources say so.
    document = sources.locator(".source-item", has_text=PDF)
    expect(document).to_have_attribute("data-state", "available", timeout=INDEXED_MS)
    expect(document.get_by_role("button", name="Remove")).to_have_count(0)  # it leaves with its folder or file
    expect(item.locator("[data-role=linked-documents]")).to_have_text("1 document · 1 available", timeout=INDEXED_MS)
    expect(item).to_have_attribute("data-outcome", "ok")
    expect(item.locator("[data-role=linked-last-sync]")).to_have_text(re.compile(r"^Last sync: .+, ok$"))
    shot(page, "linked-folders")

    # Sync now: accepted, and how many documents the round checks.
    panel.get_by_role("button", name="Sync now").click()
    expect(panel.get_by_role("status")).to_have_text("Sync started: 1 document will be checked.")
    panel.get_by_role("button", name="Sync now").click()  # one sync a minute (GNOSI_SYNCS_PER_MINUTE)
    expect(panel.locator("[data-role=linked-error]")).to_have_text(re.compile(r"^Too many sync requests; try again in \d+ s\.$"))
    expect(panel.get_by_role("status")).to_have_text("")

    # The schedule, chosen per folder, persists.
    schedule = item.get_by_role("combobox", name="Schedule of team")
    schedule.select_option(label="Every hour")
    expect(panel.get_by_role("status")).to_have_text("team now syncs on a schedule: every hour.")
    expect(item.locator("[data-role=linked-schedule]")).to_have_text(re.compile(r"^Scheduled sync: every hour"))
    page.reload()
    item = page.get_by_role("list", name="Folders this notebook follows").locator("li.linked-folder")
    expect(item.get_by_role("combobox", name="Schedule of team")).to_have_value("3600")
    expect(item.locator("[data-role=linked-schedule]")).to_have_text(re.compile(r"^Scheduled sync: every hour · next after "))

    # On a phone the section, its form open, fits the Sources tab.
    phone = open_page("mobile")
    sign_in_with_token(phone, service, service.alice_token, f"/notebooks/{notebook_id}")
    expect(phone.locator("[data-role=notebook-status]")).to_have_text("Ready")  # the page set its tabs up
    phone.get_by_role("tab", name="Sources").click()
    phone_panel = phone.get_by_role("region", name="Linked folders")
    expect(phone_panel.locator("li.linked-folder")).to_have_count(1)
    phone_panel.get_by_text("Link a folder").click()
    expect(phone_panel.get_by_role("button", name="Link folder")).to_be_visible()
    width = phone.viewport_size["width"]
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= width
    assert phone_panel.evaluate("(section) => section.getBoundingClientRect().right") <= width

    # Unlink, confirmed: the folder and its document leave the notebook.
    item.get_by_role("button", name="Unlink team").click()
    dialog = page.get_by_role("dialog", name="Are you sure?")
    expect(dialog).to_contain_text("Unlink “team”? Its 1 document leaves this notebook")
    dialog.get_by_role("button", name="Confirm").click()
    panel = page.get_by_role("region", name="Linked folders")
    expect(panel.get_by_role("status")).to_have_text("Unlinked team.")
    expect(panel.locator("li.linked-folder")).to_have_count(0)
    expect(panel.get_by_text("No linked folders.")).to_be_visible()
    expect(page.locator("#panel-sources .source-item", has_text=PDF)).to_have_count(0)
    expect(page.locator("#panel-sources .source-item[data-resource-id=dmca]")).to_have_count(1)
    listed = service.deployment.api.get(f"/api/notebooks/{notebook_id}/linked-folders").json()
    assert listed == {"items": []}, listed
