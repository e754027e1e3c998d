"""The creation and add-source selector: filter, facet, sort and page the usable catalogue.

The seed asks for the *full* matching catalogue to be sorted accent-insensitively before it is
cut into pages (so page 2 really continues page 1), for filters derived from the schema rather
than from fixed field names, and for records without usable sources to be counted as omitted
instead of being offered as choices that would fail later.
"""
from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from pipeline.types import PipelineError, SourceRef

from .records import Record
from .sources import EXCLUSIONS, exclusion, record_sources
from .tables import AUTHOR, TAGS, TYPE, Table

MAX_PER_PAGE = 200
# Facet name in the API → schema field type it is built from.
FACET_FIELD_TYPES = {"type": TYPE, "author": AUTHOR, "tag": TAGS}


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Text folded for accent- and case-insensitive comparison: 'Élan' and 'elan' are equal.

    Memoised: every request folds every title of the catalogue, and titles rarely change.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).casefold()


@dataclass(frozen=True)
class Selection:
    """One page of the selector, its facets and how many records were left out as unusable."""

    items: list[dict[str, Any]]
    total: int
    page: int
    per_page: int
    facets: dict[str, list[dict[str, Any]]]
    omitted: int
    omitted_reasons: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Entry:
    record: Record
    sources: list[SourceRef]
    excluded: str | None  # why the record cannot be chosen (sources.EXCLUSIONS)
    folded_title: str
    labels: dict[str, list[str]]

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.folded_title, self.record.resource_id)

    def item(self) -> dict[str, Any]:
        types = self.labels["type"]
        return {
            "resource_id": self.record.resource_id,
            "title": self.record.title,
            "type": types[0] if types else None,
            "authors": self.labels["author"],
            "tags": self.labels["tag"],
            "source_count": len(self.sources),
            "kinds": sorted({source.kind for source in self.sources}),
        }


def _labels(value: Any) -> Iterator[str]:
    """Facet labels of a field value: strings and numbers (``tags: [2020]``), alone or in a list."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip():
            yield str(item).strip()


def _entry(record: Record, table: Table, facet_fields: dict[str, list[str]], allowlist: Sequence[str]) -> _Entry:
    labels = {
        facet: list(dict.fromkeys(label for field in fields for label in _labels(record.values.get(field))))
        for facet, fields in facet_fields.items()
    }
    sources = record_sources(record, table, allowlist=allowlist)
    excluded = exclusion(record, table, allowlist=allowlist) if record.is_template or not sources else None
    return _Entry(record, sources, excluded, fold(record.title), labels)


def check_pagination(page: int, per_page: int) -> None:
    """Refuse pages before the first and page sizes outside 1..MAX_PER_PAGE."""
    if page < 1 or per_page < 1:
        raise PipelineError("BAD_PAGINATION", "page and per_page must be at least 1")
    if per_page > MAX_PER_PAGE:
        raise PipelineError("PAGE_SIZE_TOO_LARGE", f"per_page must be at most {MAX_PER_PAGE}")


def _facets(entries: list[_Entry]) -> dict[str, list[dict[str, Any]]]:
    """Per facet, each value and how many records carry it: most frequent first, then by name."""
    facets: dict[str, list[dict[str, Any]]] = {}
    for facet in FACET_FIELD_TYPES:
        counts = Counter(label for entry in entries for label in entry.labels[facet])
        ordered = sorted(counts.items(), key=lambda pair: (-pair[1], fold(pair[0]), pair[0]))
        facets[facet] = [{"value": value, "count": count} for value, count in ordered]
    return facets


def _matcher(q: str | None, wanted: dict[str, str | None]) -> Callable[[_Entry], bool]:
    needle = fold(q.strip()) if q else ""
    filters = {facet: value for facet, value in wanted.items() if value}

    def matches(entry: _Entry) -> bool:
        if needle and needle not in entry.folded_title:
            return False
        return all(value in entry.labels[facet] for facet, value in filters.items())

    return matches


def select_resources(
    records: Iterable[Record],
    table: Table,
    *,
    q: str | None = None,
    type: str | None = None,  # noqa: A002 - the API's filter name
    author: str | None = None,
    tag: str | None = None,
    page: int = 1,
    per_page: int = 50,
    allowlist: Sequence[str] = (),
) -> Selection:
    """One page of the records matching ``q`` (title substring) and the exact facet filters.

    ``omitted`` counts the records that match the same filters but cannot be chosen (templates,
    no usable source), and ``omitted_reasons`` says why, so the user learns why a record they look
    for is absent; ``facets`` are computed over the whole usable catalogue so that choosing one
    filter does not hide the other choices.
    """
    check_pagination(page, per_page)
    facet_fields = {facet: table.fields_of_type(field_type) for facet, field_type in FACET_FIELD_TYPES.items()}
    entries = [_entry(record, table, facet_fields, allowlist) for record in records]
    usable = [entry for entry in entries if entry.excluded is None]
    matches = _matcher(q, {"type": type, "author": author, "tag": tag})
    matching = sorted((entry for entry in usable if matches(entry)), key=lambda entry: entry.sort_key)
    reasons = Counter(entry.excluded for entry in entries if entry.excluded is not None and matches(entry))
    start = (page - 1) * per_page
    return Selection(
        items=[entry.item() for entry in matching[start : start + per_page]],
        total=len(matching),
        page=page,
        per_page=per_page,
        facets=_facets(usable),
        omitted=sum(reasons.values()),
        omitted_reasons=[
            {"code": code, "message": message, "count": reasons[code]} for code, message in EXCLUSIONS.items() if reasons[code]
        ],
    )
