"""The document names indexed beside each chunk: distinct, readable, bounded."""
from __future__ import annotations

from pipeline.chunk_context import MAX_CONTEXT_CHARS, chunk_context, document_name


def test_a_file_name_reads_as_words() -> None:
    assert document_name("attachment", "files/finance/ADOBE_2022_10K.pdf") == "ADOBE 2022 10K"
    assert document_name("attachment", "papers/attention-is-all-you-need.v2.pdf") == "attention is all you need v2"


def test_a_url_gives_its_host_and_last_segment() -> None:
    assert document_name("url", "https://en.wikipedia.org/wiki/Lake_Geneva") == "en.wikipedia.org Lake Geneva"
    assert document_name("url", "https://example.org/") == "example.org"
    assert document_name("url", "https://example.org/a/caf%C3%A9-menu.html") == "example.org café menu"


def test_names_are_deduplicated_ignoring_case_and_spacing() -> None:
    context = chunk_context(
        resource_title="Adobe 2022 10K", source_title="  adobe   2022 10k ", kind="attachment", value="x/ADOBE_2022_10K.pdf"
    )
    assert context == "Adobe 2022 10K"


def test_every_distinct_name_is_kept_in_order() -> None:
    context = chunk_context(
        resource_title="Annual report", source_title="Form 10-K", kind="attachment", value="f/3M_2018_10K.pdf"
    )
    assert context == "Annual report · Form 10-K · 3M 2018 10K"


def test_missing_names_and_long_titles() -> None:
    assert chunk_context(resource_title=None, source_title=None, kind="attachment", value="") == ""
    long = chunk_context(resource_title="word " * 400, source_title=None, kind="url", value="https://a.example/")
    assert len(long) == MAX_CONTEXT_CHARS
