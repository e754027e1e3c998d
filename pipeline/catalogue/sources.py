"""The evidence of a record: values of attachment and URL fields, and nothing else.

Titles, tags, authors, bodies and any other metadata help a user *select* records; they must
never become notebook evidence, so this is the single place that turns a record into sources
and it reads only fields whose schema type is attachment or url.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from pipeline.fetch import is_public_http_url
from pipeline.types import SourceKind, SourceRef

from .paths import is_contained_rel_path
from .records import Record
from .tables import ATTACHMENT, URL, Table


def field_strings(value: Any) -> Iterator[str]:
    """The non-empty strings of a field value that may be one string or a list of them."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str) and item.strip():
            yield item.strip()


_SOURCE_KINDS: dict[str, SourceKind] = {ATTACHMENT: "attachment", URL: "url"}

# Why a record offers no evidence, as the table view and the selector say it beside the record.
EXCLUSIONS = {
    "TEMPLATE": "Template (template: true): never offered; a copy must drop that line",
    "URL_NOT_ALLOWED": "URL not fetched: a private, loopback or non-http(s) address (GNOSI_URL_ALLOWLIST lets chosen hosts through)",
    "PATH_NOT_ALLOWED": "Attachment path leaves the vault",
    "NO_SOURCE": "No attachment or URL",
}


def exclusion(record: Record, table: Table, *, allowlist: Sequence[str] = ()) -> str | None:
    """Why ``record`` cannot be chosen (a key of ``EXCLUSIONS``), or None when it can: a record
    the user looks for must not just be missing."""
    if record.is_template:
        return "TEMPLATE"
    if record_sources(record, table, allowlist=allowlist):
        return None
    kinds = {kind for _, kind, _ in _values(record, table)}
    if "url" in kinds:
        return "URL_NOT_ALLOWED"
    return "PATH_NOT_ALLOWED" if kinds else "NO_SOURCE"


def _values(record: Record, table: Table) -> Iterator[tuple[str, SourceKind, str]]:
    """(field, kind, value) of every attachment and URL value of ``record``, usable or not, in
    schema order."""
    for field, field_type in table.fields.items():
        kind = _SOURCE_KINDS.get(field_type)
        if kind is not None:
            for value in field_strings(record.values.get(field)):
                yield field, kind, value


@lru_cache(maxsize=65536)
def _usable(kind: SourceKind, value: str, allowlist: Sequence[str]) -> bool:
    """Whether one value may be a source; memoised because the selector asks for every record
    on every request and the values of an unchanged vault repeat (``allowlist`` is a tuple)."""
    if kind == "attachment":
        return is_contained_rel_path(value)
    return is_public_http_url(value, allowlist)


def record_sources(record: Record, table: Table, *, allowlist: Sequence[str] = ()) -> list[SourceRef]:
    """The usable sources of ``record``, in schema order, identical values once.

    Attachments must be vault-relative paths that do not escape by their text (symlinks are
    checked when the file is opened, see ``resolve_attachment``); URLs must be public http(s)
    by the cheap no-DNS check (the downloader re-checks every resolved address and redirect).
    A missing attachment file still counts: ingestion reports it per source instead of the
    selector hiding a record the user expects to see.
    """
    allowed = tuple(allowlist)
    sources: list[SourceRef] = []
    seen: set[tuple[str, str]] = set()
    for field, kind, value in _values(record, table):
        if (kind, value) not in seen and _usable(kind, value, allowed):
            seen.add((kind, value))
            sources.append(SourceRef(record.resource_id, field, kind, value))
    return sources
