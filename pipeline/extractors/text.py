"""Plain text and Markdown: paragraphs grouped into segments located by character offset and line."""
from __future__ import annotations

import re

from pipeline.charset import decode_text
from pipeline.extractors.base import Extractor, extension, split_spans
from pipeline.extractors.limits import CharBudget, ExtractLimits
from pipeline.types import Extraction, Segment

_MARKDOWN_MIMES = frozenset({"text/markdown", "text/x-markdown"})
_MARKDOWN_EXTENSIONS = frozenset({"md", "markdown", "mdown", "mkd"})
_TEXT_MIMES = frozenset({"text/plain", "text/x-rst", "text/prs.fallenstein.rst", "text/csv", "text/tab-separated-values"})
_TEXT_EXTENSIONS = frozenset({"txt", "text", "rst", "csv", "tsv", "log"})
_TITLE_CHARS = 200

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FIRST_LINE = re.compile(r"\S[^\n]*")
# A title is near the top; scanning a huge file's every line for one would be wasted work.
_HEADING_SCAN_LINES = 2000
# Locator offsets count characters of the decoded text with every line end turned into "\n", the
# text the evidence view shows, so Windows and old-Mac files need no offset correction there.
_NEWLINES = re.compile(r"\r\n?")


class TextExtractor(Extractor):
    """Any text file; it also serves other ``text/*`` types no better extractor claims.

    Not sandboxed: decoding text costs a small multiple of its bytes, and the budget refuses
    more bytes than the character cap can hold before anything is decoded, so a fork would buy
    nothing.
    """

    name = "text"
    sandboxed = False

    def score(self, mime: str, filename: str) -> int:
        if mime in _MARKDOWN_MIMES or mime in _TEXT_MIMES:
            return 10
        if extension(filename) in _MARKDOWN_EXTENSIONS | _TEXT_EXTENSIONS:
            return 5
        return 1 if mime.startswith("text/") else 0

    def extract(
        self,
        data: bytes,
        *,
        filename: str,
        mime: str,
        url: str | None = None,
        declared_charset: str | None = None,
        limits: ExtractLimits,
    ) -> Extraction:
        budget = CharBudget(limits)
        budget.check_encoded(len(data))
        text = _NEWLINES.sub("\n", decode_text(data, declared_charset))
        budget.spend(len(text))
        markdown = mime in _MARKDOWN_MIMES or extension(filename) in _MARKDOWN_EXTENSIONS
        segments: list[Segment] = []
        line, counted_to = 1, 0
        for start, end in split_spans(text):
            line += text.count("\n", counted_to, start)
            counted_to = start
            segments.append(Segment(text=text[start:end], locator={"offset": start, "line": line}))
        return Extraction(
            mime=_result_mime(mime, markdown),
            segments=segments,
            title=_title(text, markdown),
        )


def _result_mime(mime: str, markdown: bool) -> str:
    """The given type when it is textual, else what the extension says (sniffed sources)."""
    if mime.startswith("text/"):
        return mime
    return "text/markdown" if markdown else "text/plain"


def _title(text: str, markdown: bool) -> str | None:
    """First ATX heading of a Markdown file (outside code fences), else the first non-empty line.

    A YAML front-matter block is skipped first: its ``---`` fence and keys are not a title.
    """
    body = _FRONT_MATTER.sub("", text, count=1) if markdown else text
    if markdown:
        in_fence = False
        for line in body.split("\n", _HEADING_SCAN_LINES)[:_HEADING_SCAN_LINES]:
            if _FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence and (heading := _ATX_HEADING.match(line)):
                return heading.group(1).strip()[:_TITLE_CHARS]
    first = _FIRST_LINE.search(body)
    return first.group(0).strip()[:_TITLE_CHARS] if first else None
