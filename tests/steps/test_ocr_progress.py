"""OCR in the extract step of the real chain: the job names the page being read (its worker
reports it through the internal API, which also keeps the job's lease), and a cancel lands
between pages, so a long scan stops within one page of it."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from pipeline.ocr.engines import missing
from steps.test_task_contract import calling_first, cancel_active_jobs, counting, ingest, raising_once, wrap
from storage.models import Job
from support.services import require
from tasks.internal_api import InternalApi, InternalApiUnavailable

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab

# multipage.pdf: six scanned pages, of which the fourth has a little text of its own
SCAN_PAGES = [1, 2, 3, 5, 6]
# Five pages of OCR took 74 s in a CI run on a loaded machine (the steps' default deadline is 60 s);
# these tests check which pages are read, never how fast.
OCR_DEADLINE_S = 240.0


@pytest.fixture
def scan_instance(lab: Lab, launch: Callable[..., Instance]) -> Instance:
    require(missing("tesseract") is None, f"tesseract: {missing('tesseract')}")
    lab.vault.pdf_record("scan", "multipage.pdf", title="Six scanned pages")
    return launch(GNOSI_OCR_DPI="150")  # the engine reads as well; the test waits less


def _activity(instance: Instance) -> list[str | None]:
    return instance.read(lambda session: [job.activity for job in session.query(Job).filter(Job.state == "running")])


def test_the_job_names_the_page_being_read(scan_instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str | None]] = []
    wrap(monkeypatch, "pipeline.ocr.reading._read", calling_first(lambda: seen.append(_activity(scan_instance))))
    notebook_id, job = ingest(scan_instance, ["scan"], timeout=OCR_DEADLINE_S)
    assert job.state == "succeeded", job.error
    assert seen == [[f"OCR: page {page} ({position} of 5)"] for position, page in enumerate(SCAN_PAGES, start=1)]
    assert job.activity is None, "cleared with the source's result"
    [source] = scan_instance.sources(scan_instance.notebook(notebook_id).active_revision_id)
    assert source.state == "available" and source.pages_needing_ocr == []


def test_a_cancel_stops_a_scan_between_pages(scan_instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []

    def before_read() -> None:
        read.append(len(read) + 1)
        if len(read) == 2:
            assert cancel_active_jobs(scan_instance) == ["cancelling"]

    wrap(monkeypatch, "pipeline.ocr.reading._read", calling_first(before_read))
    _, job = ingest(scan_instance, ["scan"], timeout=OCR_DEADLINE_S)
    assert job.state == "cancelled", job.error
    assert read == [1, 2], "pages were read after the cancel"


@pytest.mark.parametrize("failing,on_call", [("report_activity", 3), ("put_extraction", 1)])
def test_an_api_instance_out_for_a_moment_costs_no_page_read_again(
    scan_instance: Instance, monkeypatch: pytest.MonkeyPatch, failing: str, on_call: int
) -> None:
    """The instance does not answer the third page's report (the pass goes on: the report is progress,
    and the next page checks for a cancel) or the upload of the finished extraction (the task's
    retry uploads the extraction this worker holds instead of reading the scan again)."""
    calls: list[tuple[object, ...]] = []
    wrap(monkeypatch, "pipeline.ocr.reading._read", counting(calls))
    monkeypatch.setattr(InternalApi, failing, raising_once(InternalApiUnavailable("restarting"), on_call=on_call)(getattr(InternalApi, failing)))
    _, job = ingest(scan_instance, ["scan"], timeout=OCR_DEADLINE_S)
    assert job.state == "succeeded", job.error
    assert [call[2] for call in calls] == SCAN_PAGES, "pages read again"
