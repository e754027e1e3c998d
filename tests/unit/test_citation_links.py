"""The gnosi-cite link form, and the legacy evidence links that resolve to the same target."""
from __future__ import annotations

import pytest

from pipeline.citation_links import CiteTarget, is_legacy_evidence_link, parse_link

TARGET = CiteTarget("nb0123", "rev4567", "ch_89ab")


def test_a_cite_link_round_trips() -> None:
    assert TARGET.link == "gnosi-cite://nb0123/rev4567/ch_89ab"
    assert parse_link(TARGET.link) == TARGET


@pytest.mark.parametrize("legacy", [
    "/api/notebooks/nb0123/evidence/ch_89ab?revision=rev4567#page=4",
    "/notebooks/nb0123/evidence/ch_89ab?revision=rev4567",
    "http://127.0.0.1:8000/api/notebooks/nb0123/evidence/ch_89ab?revision=rev4567",
])
def test_legacy_evidence_links_name_the_same_target(legacy: str) -> None:
    assert parse_link(legacy) == TARGET


@pytest.mark.parametrize("bad", [
    "", "gnosi-cite://nb0123/rev4567", "gnosi-cite://nb0123/rev4567/ch_89ab/extra", "gnosi-cite://nb/../ch",
    "/api/notebooks/nb0123/evidence/ch_89ab", "/api/notebooks/nb0123/evidence/ch_89ab?revision=../x",
    "javascript:alert(1)//notebooks/nb0123/evidence/ch_89ab?revision=r",
    "https://example.org/wiki#History", "gnosi-cite://nb 1/r/c",
])
def test_anything_else_is_no_link(bad: str) -> None:
    assert parse_link(bad) is None


def test_only_the_json_api_form_counts_as_legacy() -> None:
    assert is_legacy_evidence_link("/api/notebooks/nb0123/evidence/ch_89ab?revision=rev4567#page=4")
    assert not is_legacy_evidence_link("/notebooks/nb0123/evidence/ch_89ab?revision=rev4567")
    assert not is_legacy_evidence_link("https://example.org/api/notebooks/x")
    assert not is_legacy_evidence_link(None)
