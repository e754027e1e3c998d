"""Plain-text and Markdown extraction, charset handling, and the registry's handling of bad input."""
from __future__ import annotations

import os

import pytest

from pipeline.charset import decode_text
from pipeline.extractors import extract, pick, register, registry
from pipeline.extractors.base import SEGMENT_CHARS, Extractor, split_spans
from pipeline.extractors.registry import sniff
from pipeline.types import Extraction, PipelineError, Segment


def test_markdown_title_is_the_first_heading_outside_front_matter_and_code():
    doc = b"---\ntitle: meta\n---\n\n```\n# a shell comment\n```\nIntro line\n\n## Real Title ##\n\nBody text.\n"
    result = extract(doc, filename="notes.md")
    assert result.title == "Real Title"
    assert result.mime == "text/markdown"


def test_plain_text_title_is_the_first_non_empty_line_bounded():
    result = extract(b"\n\n   " + b"x" * 500 + b"\nsecond line\n", filename="a.txt")
    assert result.title == "x" * 200
    assert result.mime == "text/plain"


def test_locators_give_offset_and_line_of_each_segment():
    paragraph = ("word " * 150).strip()  # 749 characters
    text = "\r\n\r\n".join(f"{i} {paragraph}" for i in range(40))
    result = extract(text.encode(), filename="long.txt")
    normalised = text.replace("\r\n", "\n")
    assert len(result.segments) > 1
    for segment in result.segments:
        offset, line = segment.locator["offset"], segment.locator["line"]
        assert normalised[offset:offset + len(segment.text)] == segment.text
        assert normalised.count("\n", 0, offset) + 1 == line
        assert len(segment.text) <= SEGMENT_CHARS
    assert result.segments[0].locator == {"offset": 0, "line": 1}
    # segments are cut between paragraphs, never inside one
    assert all(segment.text.endswith(paragraph) for segment in result.segments)


def test_huge_text_file_is_extracted_whole():
    line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\n"
    data = (line * 250_000).encode()  # about 20 MB
    result = extract(data, filename="huge.txt")
    assert sum(len(s.text) for s in result.segments) >= len(data) * 0.99
    assert result.segments[-1].locator["line"] > 249_000


def test_minified_single_line_is_cut_at_the_limit():
    spans = split_spans("a" * (SEGMENT_CHARS * 2 + 10))
    assert [end - start for start, end in spans] == [SEGMENT_CHARS, SEGMENT_CHARS, 10]


def test_whitespace_only_text_gives_no_segments():
    assert extract(b" \n\n\t \n", filename="blank.txt").segments == []


def test_legacy_charsets():
    assert decode_text("Grüße".encode("cp1252"), "windows-1252") == "Grüße"
    assert decode_text("\ufeffBOM first".encode("utf-8"), "latin-1") == "BOM first"
    assert decode_text("naïve".encode("utf-8"), "latin-1") == "naïve"  # valid UTF-8 beats the label
    assert decode_text("Ещё немного текста, чтобы определить кодировку файла.".encode("cp1251"), None) == (
        "Ещё немного текста, чтобы определить кодировку файла."
    )
    assert isinstance(decode_text(os.urandom(2048), "bogus"), str)


def test_extension_less_text_file_is_sniffed_as_text():
    result = extract(b"Read me first.\n", filename="README", mime="application/octet-stream")
    assert result.mime == "text/plain" and result.title == "Read me first."


def test_markdown_is_picked_by_extension_when_the_type_is_generic():
    assert pick("application/octet-stream", "notes.md").name == "text"
    assert pick("text/html", "page.html").name == "html"


def test_empty_bytes():
    with pytest.raises(PipelineError) as caught:
        extract(b"", filename="nothing.txt")
    assert caught.value.code == "EMPTY_FILE"


def test_unknown_binary_type_is_unsupported():
    with pytest.raises(PipelineError) as caught:
        extract(b"\x00\x01\x02\x03" + os.urandom(1000), filename="blob.bin")
    assert caught.value.code == "UNSUPPORTED_TYPE"
    with pytest.raises(PipelineError) as caught:
        pick("application/zip", "archive.zip")
    assert caught.value.code == "UNSUPPORTED_TYPE"


def test_sniffing_order():
    assert sniff(b"junk\n%PDF-1.7 rest", "x.txt") == "application/pdf"
    assert sniff(b"\n  <!DOCTYPE HTML><p>", "x") == "text/html"
    assert sniff(b"\x89PNG\r\n\x1a\n\x00\x00", "photo.png") == "image/png"
    assert sniff(b"\xff\x00\xfe", "mystery") == "application/octet-stream"


class ShoutExtractor(Extractor):
    """Sandboxed, like any extractor by default: it travels to the decoder helper pickled by
    reference, so it is defined at module level (the helper is forked from this process)."""

    name = "test-shout"

    def score(self, mime: str, filename: str) -> int:
        return 20 if mime == "text/x-shout" else 0

    def extract(self, data, *, filename, mime, url=None, declared_charset=None, limits) -> Extraction:
        segments = [Segment(text=data.decode().upper(), locator={"offset": 0})]
        return Extraction(mime=mime, title=str(os.getpid()), segments=segments)


def test_a_new_extractor_is_one_register_call(monkeypatch):
    monkeypatch.setattr(registry, "_extractors", list(registry._extractors))  # undone after the test
    register(ShoutExtractor())
    result = extract(b"hello", filename="x", mime="text/x-shout")
    assert result.segments[0].text == "HELLO" and result.title != str(os.getpid())  # read in the helper
    assert pick("text/plain", "a.txt").name == "text"
