"""Tests of the selector and of request validation over in-memory records.

Records are built directly (no files) so the hypothesis test can generate whole catalogues.
"""
from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.catalogue import EXCLUSIONS, MAX_PER_PAGE, Record, Selection, Table, select_resources, validate_resource_ids
from pipeline.types import PipelineError

TABLE = Table(
    id="refs",
    name="Anything",
    folder=Path("/vault/Anything"),
    fields={"name": "text", "pdf": "attachment", "web": "url", "by": "author", "labels": "tags", "genre": "type"},
)


def record(rid: str, title: str, *, template: bool = False, usable: bool = True, **values: Any) -> Record:
    if usable:
        values.setdefault("pdf", f"papers/{rid}.pdf")
    return Record(rid, f"Anything/{rid}.md", title, {"name": title, **values}, template)


RECORDS = [
    record("z", "Zebra", genre="paper", by=["Ana", "Bo"], labels=["zoo"]),
    record("e1", "Élan", genre="paper", by="Ana", labels=["ml", 2020]),
    record("e2", "eclair", genre="web", web="https://example.org/e", pdf=None, usable=False, labels=["ml"]),
    record("a", "Ábaco", genre=["book", "paper"], by="Çelik"),
    record("e3", "ÉLAN", genre="book"),
    record("t", "Aaa template", template=True, genre="secret-type", labels=["secret"]),
    record("n", "No sources", usable=False, genre="paper", labels=["ml"]),
    record("p", "Private", usable=False, web="http://10.0.0.1/x"),
]


def titles(selection: Selection) -> list[str]:
    return [item["title"] for item in selection.items]


def test_sorted_accent_and_case_insensitively_with_id_ties() -> None:
    selection = select_resources(RECORDS, TABLE)
    assert titles(selection) == ["Ábaco", "eclair", "Élan", "ÉLAN", "Zebra"]
    assert [item["resource_id"] for item in selection.items][2:4] == ["e1", "e3"]
    # Omitted, each with its reason: the template, the record without a source and the one whose URL is private.
    assert (selection.total, selection.omitted, selection.page, selection.per_page) == (5, 3, 1, 50)
    assert {reason["code"]: reason["count"] for reason in selection.omitted_reasons} == {"TEMPLATE": 1, "NO_SOURCE": 1, "URL_NOT_ALLOWED": 1}
    assert selection.to_dict()["items"][0]["type"] == "book"


def test_query_is_an_accent_insensitive_title_substring() -> None:
    assert titles(select_resources(RECORDS, TABLE, q="ELA")) == ["Élan", "ÉLAN"]
    assert titles(select_resources(RECORDS, TABLE, q=" ábá ")) == ["Ábaco"]
    assert select_resources(RECORDS, TABLE, q="source").omitted == 1  # "No sources" matches but is unusable
    assert select_resources(RECORDS, TABLE, q="template").total == 0
    assert select_resources(RECORDS, TABLE, q="template").omitted_reasons == [
        {"code": "TEMPLATE", "message": EXCLUSIONS["TEMPLATE"], "count": 1}
    ]


def test_facets_come_from_schema_types_over_the_usable_catalogue() -> None:
    facets = select_resources(RECORDS, TABLE, q="zebra").facets
    assert facets["type"] == [{"value": "paper", "count": 3}, {"value": "book", "count": 2},
                              {"value": "web", "count": 1}]
    assert facets["author"] == [{"value": "Ana", "count": 2}, {"value": "Bo", "count": 1},
                                {"value": "Çelik", "count": 1}]
    assert facets["tag"] == [{"value": "ml", "count": 2}, {"value": "2020", "count": 1}, {"value": "zoo", "count": 1}]


def test_filters_are_exact_facet_values() -> None:
    assert titles(select_resources(RECORDS, TABLE, type="paper")) == ["Ábaco", "Élan", "Zebra"]
    assert titles(select_resources(RECORDS, TABLE, author="Ana", tag="zoo")) == ["Zebra"]
    assert titles(select_resources(RECORDS, TABLE, tag="2020")) == ["Élan"]
    only_ml = select_resources(RECORDS, TABLE, tag="ml")
    assert (titles(only_ml), only_ml.omitted) == (["eclair", "Élan"], 1)
    assert select_resources(RECORDS, TABLE, type="secret-type").total == 0


def test_a_schema_without_facet_fields_has_empty_facets() -> None:
    bare = Table("b", "b", Path("/v/b"), {"title": "text", "file": "attachment"})
    selection = select_resources([Record("x", "b/x.md", "x", {"file": "x.pdf"}, False)], bare)
    assert selection.facets == {"type": [], "author": [], "tag": []}
    assert selection.items[0]["type"] is None


@pytest.mark.parametrize(("page", "per_page", "code"), [
    (0, 10, "BAD_PAGINATION"), (1, 0, "BAD_PAGINATION"), (-1, 10, "BAD_PAGINATION"),
    (1, MAX_PER_PAGE + 1, "PAGE_SIZE_TOO_LARGE"),
])
def test_bad_pagination(page: int, per_page: int, code: str) -> None:
    with pytest.raises(PipelineError) as error:
        select_resources(RECORDS, TABLE, page=page, per_page=per_page)
    assert error.value.code == code


def test_pages_past_the_end_are_empty() -> None:
    selection = select_resources(RECORDS, TABLE, page=4, per_page=2)
    assert (selection.items, selection.total) == ([], 5)


def test_validation_errors_name_the_first_few_ids() -> None:
    many = [record(f"u{n}", f"u{n}", usable=False) for n in range(8)]
    with pytest.raises(PipelineError) as error:
        validate_resource_ids(many, TABLE, [r.resource_id for r in many])
    assert error.value.code == "RESOURCE_HAS_NO_SOURCES"
    assert "'u4'" in error.value.message and "'u5'" not in error.value.message
    assert error.value.message.endswith("and 3 more")
    with pytest.raises(PipelineError) as error:
        validate_resource_ids(RECORDS, TABLE, ["x" * 5000])
    assert error.value.code == "RESOURCE_NOT_FOUND" and len(error.value.message) < 200
    assert validate_resource_ids(RECORDS, TABLE, []) == {}
    assert list(validate_resource_ids(RECORDS, TABLE, ["z", "p"], allowlist=["10.0.0.1"])) == ["z", "p"]
    assert len(validate_resource_ids([record(f"r{n}", "r") for n in range(1000)], TABLE,
                                     [f"r{n}" for n in range(1000)])) == 1000


# --- property: pagination partitions the sorted matching catalogue -----------------------

def oracle_key(title: str) -> str:
    decomposed = unicodedata.normalize("NFKD", title)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


TITLE_ALPHABET = "aAáÁeEéÉèiIñÑoOöÖuUzZß ﬁ1"
catalogues = st.lists(
    st.tuples(st.text(TITLE_ALPHABET, max_size=6), st.booleans(), st.booleans()),
    max_size=40,
).map(lambda rows: [record(f"r{n:02d}", title, template=tpl, usable=ok) for n, (title, tpl, ok) in enumerate(rows)])


@settings(max_examples=200, deadline=None)
@given(
    catalogues,
    st.one_of(st.none(), st.text(TITLE_ALPHABET, max_size=3)),
    st.one_of(st.integers(1, 12), st.sampled_from([50, MAX_PER_PAGE])),
)
def test_pages_are_a_disjoint_sorted_partition(records: list[Record], q: str | None, per_page: int) -> None:
    needle = oracle_key((q or "").strip())
    expected = sorted(
        (r for r in records if not r.is_template and r.values.get("pdf") and needle in oracle_key(r.title)),
        key=lambda r: (oracle_key(r.title), r.resource_id),
    )
    templates = {r.resource_id for r in records if r.is_template}
    seen: list[str] = []
    page = 1
    while True:
        selection = select_resources(records, TABLE, q=q, page=page, per_page=per_page)
        assert selection.total == len(expected)
        ids = [item["resource_id"] for item in selection.items]
        assert not templates & set(ids)
        assert not set(seen) & set(ids)
        seen += ids
        if len(ids) < per_page:
            break
        page += 1
    assert seen == [r.resource_id for r in expected]
