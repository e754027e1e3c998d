"""Web page extraction against readability's expected output for the six corpus pages."""
from __future__ import annotations

import json
import re
from pathlib import Path

import lxml.html
import pytest

from pipeline.charset import decode_html
from pipeline.extractors import extract
from pipeline.extractors.base import SEGMENT_CHARS
from pipeline.types import Extraction

PAGES = ["google-sre-book-1", "ietf-1", "qq", "v8-blog", "wikipedia", "wikipedia-3"]
_BLOCK_TAGS = {
    "p", "li", "dt", "dd", "pre", "td", "th", "tr", "div", "section", "article", "blockquote",
    "figcaption", "caption", "table", "ul", "ol", "dl", "br", "h1", "h2", "h3", "h4", "h5", "h6",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _oracle_sentences(expected_html: str) -> list[str]:
    """Sentences over 40 characters of readability's output, never spanning two blocks."""
    root = lxml.html.fromstring(expected_html)
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag in _BLOCK_TAGS:
            element.text = "\n" + (element.text or "")
            element.tail = "\n" + (element.tail or "")
    sentences = []
    for block in root.text_content().split("\n"):
        sentences += [s.strip() for s in _SENTENCE_END.split(_collapse(block)) if len(s.strip()) > 40]
    return sentences


def _loosely_equal(ours: str, theirs: str) -> bool:
    """Same title give or take a site name or a kicker: containment or most shared words."""
    a, b = (re.findall(r"\w+", t.casefold()) for t in (ours, theirs))
    if " ".join(a) in " ".join(b) or " ".join(b) in " ".join(a):
        return True
    return len(set(a) & set(b)) >= 0.6 * min(len(set(a)), len(set(b)))


def _extract_page(corpus_dir: Path, page: str, url: str | None = None) -> Extraction:
    source = corpus_dir / "html" / page / "source.html"
    return extract(source.read_bytes(), filename="source.html", url=url)


@pytest.mark.parametrize("page", PAGES)
def test_main_content_matches_readability(corpus_dir, page):
    folder = corpus_dir / "html" / page
    result = _extract_page(corpus_dir, page)
    text = _collapse(" ".join(s.text for s in result.segments))
    sentences = _oracle_sentences((folder / "expected.html").read_text("utf-8"))
    found = sum(sentence in text for sentence in sentences)
    assert sentences and found / len(sentences) >= 0.9, f"{page}: {found}/{len(sentences)}"
    assert result.mime == "text/html"
    assert all(0 < len(s.text) <= SEGMENT_CHARS for s in result.segments)


@pytest.mark.parametrize("page", [p for p in PAGES if p != "google-sre-book-1"])
def test_title_matches_readability(corpus_dir, page):
    expected = json.loads((corpus_dir / "html" / page / "expected-metadata.json").read_text("utf-8"))["title"]
    assert _loosely_equal(_extract_page(corpus_dir, page).title, expected)


def test_book_chapter_title_is_the_chapter_not_the_site(corpus_dir):
    """readability keeps the site-wide <title>; trafilatura finds the chapter's heading, which
    tells a reader of a citation which of the book's chapters the evidence comes from."""
    assert _extract_page(corpus_dir, "google-sre-book-1").title == "Chapter 6 - Monitoring Distributed Systems"


def test_navigation_is_left_out(corpus_dir):
    text = " ".join(s.text for s in _extract_page(corpus_dir, "google-sre-book-1").segments)
    assert "Monitoring Distributed Systems" in text
    for navigation in ("Table of Contents", "The Evolution of Automation at Google", "Part III - Practices",
                       "Effective Troubleshooting", "Copyright © 2017 Google"):
        assert navigation not in text


@pytest.mark.parametrize(
    ("page", "heading", "fragment"),
    [
        ("wikipedia", "Eich CEO promotion controversy", "Eich_CEO_promotion_controversy"),  # id on a child span
        ("v8-blog", "Running in Wasm runtimes", "running-in-wasm-runtimes"),  # id on the heading
        ("google-sre-book-1", "Symptoms Versus Causes", "symptoms-versus-causes-g0sEi4"),  # id on the section
    ],
)
def test_sections_point_at_their_heading(corpus_dir, page, heading, fragment):
    url = f"https://example.org/{page}"
    result = _extract_page(corpus_dir, page, url=url)
    section = next(s for s in result.segments if s.text.startswith(heading))
    assert section.locator == {"url": url, "fragment": fragment}


def test_text_before_any_heading_has_no_fragment(corpus_dir):
    result = _extract_page(corpus_dir, "ietf-1")
    assert len(result.segments) > 1  # one long section, cut to segment size
    assert {s.locator["fragment"] for s in result.segments} == {None}
    assert {s.locator["url"] for s in result.segments} == {None}


def test_page_declaring_gb2312_but_stored_as_utf8(corpus_dir):
    result = _extract_page(corpus_dir, "qq")
    text = " ".join(s.text for s in result.segments)
    assert "DeepMind" in text and "人工智能" in text
    assert "\ufffd" not in text
    assert result.title == "DeepMind新电脑已可利用记忆自学 人工智能迈上新台阶"


def test_really_gbk_page_uses_its_meta_charset(corpus_dir):
    data = (corpus_dir / "html" / "qq" / "source.html").read_text("utf-8").encode("gb18030")
    result = extract(data, filename="page.html")
    assert "收购的人工智能公司DeepMind" in " ".join(s.text for s in result.segments)
    assert result.title == "DeepMind新电脑已可利用记忆自学 人工智能迈上新台阶"


def test_html_is_sniffed_from_its_bytes():
    page = b"<!DOCTYPE html><html><head><title>Hello page</title></head><body><article>" + (
        b"<p>This paragraph is the main content of a tiny test page and has a few words.</p>" * 5
    ) + b"</article></body></html>"
    result = extract(page, filename="download", mime="application/octet-stream")
    assert result.mime == "text/html"
    assert "main content of a tiny test page" in result.segments[0].text


def test_charset_parameter_of_the_mime_is_honoured():
    body = "<html><head><title>Café</title></head><body><p>" + "Crème brûlée à la carte. " * 10 + "</p></body></html>"
    result = extract(body.encode("cp1252"), filename="x.html", mime="text/html; charset=windows-1252")
    assert "Crème brûlée" in result.segments[0].text


def test_decode_html_prefers_bom_then_utf8_then_labels():
    assert decode_html("\ufeffé".encode("utf-8"), "iso-8859-1") == "é"
    assert decode_html("é".encode("utf-16"), None) == "é"
    assert decode_html('<meta charset="gb2312">中文'.encode("utf-8"), "gb2312").endswith("中文")
    assert decode_html("<p>é</p>".encode("cp1252"), "windows-1252") == "<p>é</p>"
    assert decode_html('<meta charset="koi8-r"><p>привет</p>'.encode("koi8_r"), None).endswith("привет</p>")


def test_decode_html_never_raises():
    assert isinstance(decode_html(b"\x81\xfe\xff\x00garbage\xc3", "no-such-charset"), str)
    assert decode_html(b"", None) == ""
