"""The words that name a chunk's document, indexed beside the chunk's text.

A passage deep inside a filing rarely names its company or year, while the question does ("What
was Adobe's FY2022 operating margin?"), so bm25 over the passage alone cannot tell ten similar
pages of ten filings apart. Indexing the document's names (the record's title, the title the
file declares, the file or page name) as a second FTS5 column lets those words count without
changing the passage a citation quotes. bench/answer_quality.py measured the gain.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

MAX_CONTEXT_CHARS = 500
_SEPARATORS = re.compile(r"[_\-.+]+")


def document_name(kind: str, value: str) -> str:
    """A file's stem or a URL's host and last path segment, with ``_-.+`` read as spaces."""
    if kind == "url":
        parts = urlsplit(value)
        last = PurePosixPath(unquote(parts.path)).stem
        return " ".join(filter(None, [parts.hostname or "", _SEPARATORS.sub(" ", last).strip()]))
    return _SEPARATORS.sub(" ", PurePosixPath(value).stem).strip()


def chunk_context(*, resource_title: str | None, source_title: str | None, kind: str, value: str) -> str:
    """The distinct names of one source's document, joined by `` · ``, at most 500 characters."""
    names = [resource_title, source_title, document_name(kind, value)]
    distinct: dict[str, str] = {}
    for name in names:
        cleaned = " ".join((name or "").split())
        if cleaned:
            distinct.setdefault(cleaned.casefold(), cleaned)
    return " · ".join(distinct.values())[:MAX_CONTEXT_CHARS]
