"""Each document bomb ends with its cap's reason, within bounded memory (issue #11, item 5).

Before the caps, a 1 KB PDF became millions of characters and thousands of chunks, a 1 MB Flate
bomb took 2.1 GB of the worker and a page tree claiming 200,000 pages was read page by page.
Every bomb here is built in memory (tests/support/bombs.py) and processed by a fresh interpreter
(tests/support/bomb_probe.py) exactly as an extract worker processes a source, with a 256 MB
decoder budget, so the peaks below are this bomb's alone.
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits
from pipeline.types import PipelineError
from support.bombs import text_flood_pdf
from support.services import REPO

BUDGET_MB = 256
# The decoder helper's resident set starts as a copy of the worker's plus its own copy of the
# document (the bytes come through a pipe), then may grow by the budget; page tables and the
# pipe's buffers are not part of the address space the limit counts.
CHILD_SLACK_MB = 32
# What the worker itself may grow by while a source is refused or cut: far below any bomb.
WORKER_GROWTH_MB = 64

# name: (generator, its arguments, file name, caps other than the budget, status, code)
BOMBS: dict[str, tuple[str, dict[str, int], str, dict[str, int], str, str]] = {
    "one page drawing 20 M characters from 1.3 KB": (
        "text_flood_pdf", {"draws": 20_000}, "flood.pdf", {}, "error", "EXTRACT_MEMORY_LIMIT",
    ),
    "one page of 204,000 characters": (
        "text_flood_pdf", {"draws": 200}, "page.pdf", {}, "extracted", "EXTRACT_PAGE_TRUNCATED",
    ),
    "100 pages of 61,000 characters past a 1 M source cap": (
        "text_flood_pdf", {"draws": 60, "pages": 100}, "pages.pdf", {"max_chars": 1_000_000},
        "error", "EXTRACT_TOO_LARGE",
    ),
    "a page tree naming one page 200,000 times": (
        "text_flood_pdf", {"draws": 1, "pages": 200_000}, "tree.pdf", {}, "error", "EXTRACT_TOO_MANY_PAGES",
    ),
    "a page tree whose /Count claims 200,000 pages": (
        "page_count_lie_pdf", {"claimed": 200_000}, "count.pdf", {}, "error", "EXTRACT_TOO_MANY_PAGES",
    ),
    "a 1 MB Flate stream inflating to 1 GiB": (
        "flate_bomb_pdf", {"inflated_mib": 1024}, "flate.pdf", {}, "error", "EXTRACT_MEMORY_LIMIT",
    ),
    "a 25 MB page of distinct paragraphs": (
        "distinct_paragraphs_html", {"count": 300_000}, "page.html", {}, "error", "EXTRACT_MEMORY_LIMIT",
    ),
    "a 25 MB page of one paragraph repeated, past a 1 s cap": (
        "repeated_paragraphs_html", {"mib": 25}, "page.html", {"timeout_seconds": 1}, "error", "EXTRACT_TIMEOUT",
    ),
    "a web page of 750,000 characters past a 500,000 source cap": (
        "distinct_paragraphs_html", {"count": 10_000}, "page.html", {"max_chars": 500_000},
        "error", "EXTRACT_TOO_LARGE",
    ),
}


def _probe(generator: str, args: dict[str, int], filename: str, caps: dict[str, int]) -> dict[str, Any]:
    order = {"bomb": generator, "args": args, "filename": filename, "limits": {"memory_mb": BUDGET_MB, **caps}}
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "support" / "bomb_probe.py"), json.dumps(order)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", BOMBS)
def test_each_document_bomb_is_bounded_in_memory_and_ends_with_its_reason(name: str) -> None:
    generator, args, filename, caps, status, code = BOMBS[name]
    outcome = _probe(generator, args, filename, caps)
    assert (outcome["status"], outcome["error_code"]) == (status, code), outcome
    assert len(outcome["error"]) <= 300 and "GNOSI_EXTRACT_" in outcome["error"], outcome
    assert outcome["peak_rss_mib"] - outcome["rss_before_mib"] <= WORKER_GROWTH_MB, outcome
    own_copy_mib = outcome["input_bytes"] / 2**20
    child_bound_mib = outcome["rss_before_mib"] + own_copy_mib + BUDGET_MB + CHILD_SLACK_MB
    assert outcome["child_peak_rss_mib"] <= child_bound_mib, outcome
    if status == "extracted":  # the cut page is indexed up to the cap, not beyond it
        assert 0 < outcome["chars"] <= 1.2 * ExtractLimits().max_page_chars, outcome


def test_a_page_at_the_cap_is_read_whole_and_one_character_more_is_cut() -> None:
    page = text_flood_pdf(draws=20)  # PDFium counts 20 x 10 lines of 100 letters + CRLF, less the last CRLF
    whole = extract(page, filename="page.pdf", limits=ExtractLimits(max_page_chars=20_398))
    assert whole.truncated_pages == [] and len(whole.segments[0].text) == 20_199  # CRLF read as LF
    cut = extract(page, filename="page.pdf", limits=ExtractLimits(max_page_chars=20_397))
    assert cut.truncated_pages == [1] and cut.segments[0].text == whole.segments[0].text[:-1]


def test_plain_text_past_the_source_cap_is_refused_before_and_after_decoding() -> None:
    limits = ExtractLimits(max_chars=1_000)
    for data in (b"x" * 4_001, "é".encode() * 1_001):  # more bytes than 4 x the cap; 1,001 characters
        with pytest.raises(PipelineError) as caught:
            extract(data, filename="notes.txt", limits=limits)
        assert caught.value.code == "EXTRACT_TOO_LARGE"
    assert extract(b"x" * 1_000, filename="notes.txt", limits=limits).segments[0].text == "x" * 1_000
