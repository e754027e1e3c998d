"""Scans, images and tables in the real service: OCR reads them in the worker (tesseract, the
default), an answer from a scan cites its page and the boxes of the cited lines, and the viewer
renders the scanned page (not blank: pixels read back from Chromium) with boxes over the printed
words of the quoted lines. A scan whose images are JPEG 2000 renders too (pdf.js's WebAssembly
decoder under our CSP). A question about a figure in a ruled table is answered from the table's
row, which the viewer boxes on the page."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from browser_support import Service, cited, open_citation
from playwright.sync_api import expect
from support.live import deployment
from support.ocr_truth import character_accuracy
from support.services import require
from support.vault import VaultBuilder

from pipeline.ocr.engines import missing


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Iterator[tuple[Service, str]]:  # type: ignore[no-untyped-def]
    """A service of its own whose notebook holds a scanned brochure, a scanned book (JPEG 2000
    images with their own OCR layer), an infographic image and a one-table report, indexed."""
    require(missing("tesseract") is None, f"tesseract: {missing('tesseract')}")
    tmp = tmp_path_factory.mktemp("scans")
    vault = VaultBuilder(tmp / "vault")
    vault.record("brochure", "LinnSequencer brochure", file=vault.attach_corpus("pdf/linn.pdf"))
    vault.record("vicksburg", "The siege of Vicksburg", file=vault.attach_corpus("pdf/Seige_of_Vicksburg_Sample_OCR.pdf"))
    vault.record("poster", "Coronavirus poster", file=vault.attach_corpus("images/english.png"))
    vault.record("nics", "Firearm background checks", file=vault.attach_corpus("pdf/nics-background-checks-2015-11.pdf"))
    with ExitStack() as stack:
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, redis=False))
        d.start_web()
        notebook_id = d.api.create(["brochure", "vicksburg", "poster", "nics"], title="Scans")
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded", detail
        service = Service(d, str(d.api.http.base_url).rstrip("/"), d.token, d.token, "")
        yield service, notebook_id


INK = """(selector) => {
  // Share of dark pixels on the rendered page, and inside the first highlighted box.
  const sheet = document.querySelector(selector);
  const picture = sheet.querySelector('canvas, img');
  const canvas = document.createElement('canvas');
  const sheetBox = sheet.getBoundingClientRect();
  canvas.width = Math.round(sheetBox.width); canvas.height = Math.round(sheetBox.height);
  const context = canvas.getContext('2d');
  context.drawImage(picture, 0, 0, canvas.width, canvas.height);
  const dark = (x, y, w, h) => {
    const { data } = context.getImageData(Math.round(x), Math.round(y), Math.max(1, Math.round(w)), Math.max(1, Math.round(h)));
    let count = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] + data[i + 1] + data[i + 2] < 384) count += 1;
    return count / (data.length / 4);
  };
  const box = sheet.querySelector('.cited-box');
  const inBox = box ? (() => { const b = box.getBoundingClientRect(); return dark(b.left - sheetBox.left, b.top - sheetBox.top, b.width, b.height); })() : null;
  return { page: dark(0, 0, canvas.width, canvas.height), box: inBox, boxes: sheet.querySelectorAll('.cited-box').length };
}"""


def test_an_answer_from_a_scan_cites_its_page_and_boxes_and_the_viewer_draws_them(scans, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = scans
    citation = cited(service, notebook_id, "How many notes does one disk of the LinnSequencer hold?", "brochure")
    locator = citation["locator"]
    assert locator["page"] == 1 and locator["ocr"] == "tesseract" and locator["boxes"], locator
    assert "110,000 notes" in citation["quote"] or character_accuracy(citation["quote"], "holds over 110,000 notes") > 0.5

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    expect(page.locator("[data-role=evidence-locator]")).to_have_text("Page 1 · machine-read (tesseract)")
    sheet = page.locator(".pdf-page[data-page-number='1']")
    expect(sheet).to_have_attribute("data-highlighted", "true")
    ink = page.evaluate(INK, ".pdf-page[data-page-number='1']")
    assert ink["page"] > 0.01, ink  # a blank page would be all white
    assert 1 <= ink["boxes"] < len(locator["boxes"]), ink  # the quote's lines, not the whole chunk's
    assert ink["box"] > 0.05, ink  # the box sits on printed words
    shot(page, "evidence-scan")


def test_an_image_file_opens_with_the_cited_lines_marked(scans, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = scans
    citation = cited(service, notebook_id, "How should you cover your nose and mouth when sneezing?", "poster")
    assert citation["locator"]["boxes"], citation

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    expect(page.locator(".image-page img")).to_be_visible()
    expect(page.locator(".image-page")).to_have_attribute("data-highlighted", "true")
    ink = page.evaluate(INK, ".image-page")
    assert ink["boxes"] >= 1 and ink["page"] > 0.01, ink
    shot(page, "evidence-image")


def test_a_jpeg2000_scan_renders_under_the_content_security_policy(scans, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = scans
    citation = cited(service, notebook_id, "What rumour about Johnston creeps into camp during the siege?", "vicksburg")
    assert citation["locator"]["page"] == 1 and "ocr" not in citation["locator"], citation  # its own text layer

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    sheet = page.locator(".pdf-page[data-page-number='1']")
    expect(sheet).to_have_attribute("data-highlighted", "true")
    ink = page.evaluate(INK, ".pdf-page[data-page-number='1']")
    assert ink["page"] > 0.02, ink  # the scanned image itself, not only an invisible text layer


def test_a_table_question_is_answered_from_its_row_and_the_viewer_boxes_the_row(scans, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = scans
    citation = cited(service, notebook_id, "How many handgun background checks did Alabama have in November 2015?", "nics")
    locator = citation["locator"]
    assert locator["page"] == 1 and locator.get("table") == 1 and len(locator["boxes"]) == 1, citation["quote"]
    assert "State / Territory: Alabama |" in citation["quote"] and "Handgun: 23,022" in citation["quote"], citation

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    sheet = page.locator(".pdf-page[data-page-number='1']")
    expect(sheet).to_have_attribute("data-highlighted", "true")
    ink = page.evaluate(INK, ".pdf-page[data-page-number='1']")
    assert ink["boxes"] == 1 and ink["box"] > 0.02, ink  # the row's box, over its printed figures
    expect(page.locator("[data-role=evidence-locator]")).to_have_text("Page 1 · table 1")
    shot(page, "evidence-table")
