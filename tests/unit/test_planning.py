"""Which sources a new revision reuses and which it extracts again."""
from __future__ import annotations

from datetime import datetime, timedelta

from pipeline.planning import Observed, PreviousSource, key_of, plan_sources, touched, unchanged
from pipeline.types import SourceRef

NOW = datetime(2026, 11, 29, 12, 0, 0)
PDF = SourceRef("r1", "file", "attachment", "files/a.pdf")
URL = SourceRef("r2", "link", "url", "https://example.org/a")
URL_DUE = SourceRef("r3", "link", "url", "https://example.org/b")
RECIPE = "chunks 1200/150; vectors hashing-v1"


def previous(ref: SourceRef, **values) -> dict:  # type: ignore[no-untyped-def]
    base = {
        "source_id": "s-" + ref.resource_id, "state": "available", "fingerprint": "f1", "checked_at": NOW,
        "chunking": RECIPE, "extraction_key": "e-" + ref.resource_id,
    }
    return {key_of(ref): PreviousSource(**{**base, **values})}


def plan(current, prev, **kwargs):  # type: ignore[no-untyped-def]
    return plan_sources(current, prev, now=NOW, url_ttl_seconds=3600, **{"chunking": RECIPE, **kwargs})


def test_unchanged_attachment_is_reused() -> None:
    prev = previous(PDF)
    plans = plan([Observed(PDF, "f1")], prev)
    assert [p.action for p in plans] == ["reuse"] and unchanged(plans, prev)


def test_changed_attachment_is_extracted() -> None:
    plans = plan([Observed(PDF, "f2")], previous(PDF))
    assert [p.action for p in plans] == ["extract"]


def test_forced_resource_is_extracted_without_validators() -> None:
    plans = plan([Observed(PDF, "f1"), Observed(URL)], {**previous(PDF), **previous(URL, etag='"x"')},
                 force_resource_ids=frozenset({"r2"}))
    assert [p.action for p in plans] == ["reuse", "extract"]
    assert plans[1].validators == {}


def test_a_retry_keeps_every_other_source_as_it_is_even_a_due_url_or_a_changed_file() -> None:
    prev = {**previous(PDF), **previous(URL_DUE, checked_at=NOW - timedelta(days=2)), **previous(URL)}
    plans = plan([Observed(PDF, "f2"), Observed(URL_DUE), Observed(URL)], prev, force_resource_ids=frozenset({"r2"}))
    assert [p.action for p in plans] == ["keep", "keep", "extract"]
    assert plans[0].fingerprint == "f1", "the kept evidence is the old bytes': the next check must still see f2"
    assert touched(plans) == [] and not unchanged(plans, prev)


def test_url_within_ttl_is_reused_and_after_ttl_revalidated_with_its_validators() -> None:
    fresh = previous(URL, etag='"v1"', last_modified="Sun, 29 Nov 2026 10:00:00 GMT", content_hash="h")
    assert plan([Observed(URL)], fresh)[0].action == "reuse"
    old = previous(URL, checked_at=NOW - timedelta(hours=2), etag='"v1"', content_hash="h")
    planned = plan([Observed(URL)], old)[0]
    assert planned.action == "extract"
    assert planned.validators == {"etag": '"v1"', "content_hash": "h"}


def test_failed_sources_are_retried_and_new_or_removed_sources_are_changes() -> None:
    assert plan([Observed(PDF, "f1")], previous(PDF, state="error"))[0].action == "extract"
    stale = plan([Observed(PDF, "f1")], previous(PDF, state="stale"))
    assert stale[0].action == "reuse"
    prev = {**previous(PDF), **previous(URL)}
    assert not unchanged(plan([Observed(PDF, "f1")], prev), prev)
    assert not unchanged(plan([Observed(PDF, "f1"), Observed(URL)], previous(PDF)), previous(PDF))


def test_a_renamed_record_is_reused_but_makes_a_new_revision() -> None:
    """The record title is indexed with the chunks: a rename copies them under the new name."""
    prev = previous(PDF, resource_title="Old name")
    plans = plan([Observed(PDF, "f1", resource_title="New name")], prev)
    assert [p.action for p in plans] == ["reuse"] and plans[0].resource_title == "New name"
    assert not unchanged(plans, prev)
    assert unchanged(plan([Observed(PDF, "f1", resource_title="Old name")], prev), prev)


def test_a_new_chunking_recipe_chunks_again_from_the_cached_extraction() -> None:
    prev = {**previous(PDF), **previous(URL, etag='"x"'), **previous(URL_DUE, etag='"y"', checked_at=NOW - timedelta(days=1))}
    plans = plan([Observed(PDF, "f1"), Observed(URL), Observed(URL_DUE)], prev, chunking="chunks 800/100; vectors hashing-v1")
    assert [p.action for p in plans] == ["extract"] * 3 and not unchanged(plans, prev)
    assert [p.cached_extraction for p in plans] == ["e-r1", "e-r2", None]
    assert plans[2].validators == {}  # a 304 would keep the old chunks: fetched in full, found in the cache by its hash


def test_a_due_recording_under_a_new_recipe_is_probed_and_chunked_from_its_cached_extraction() -> None:
    """Not downloaded (up to hundreds of MB) only to find the same bytes in the cache."""
    prev = previous(URL_DUE, media_fingerprint="m1", content_hash="c1", checked_at=NOW - timedelta(days=1))
    [due] = plan([Observed(URL_DUE)], prev, chunking="chunks 800/100; vectors hashing-v1")
    assert (due.action, due.validators, due.cached_extraction) == ("extract", {"media_fingerprint": "m1"}, "e-r3")


def test_a_touched_attachment_is_reused_and_its_new_stat_reported() -> None:
    prev = previous(PDF, file_size=10, file_mtime_ns=1)
    same = plan([Observed(PDF, "f1", 10, 1)], prev)
    moved = plan([Observed(PDF, "f1", 10, 2)], prev)
    edited = plan([Observed(PDF, "f2", 11, 2)], prev)
    assert touched(same) == [] and touched(edited) == []
    assert [(p.action, p.file_mtime_ns) for p in touched(moved)] == [("reuse", 2)] and unchanged(moved, prev)


LINKED = SourceRef("linked:d1", "linked", "linked", "d1/report.pdf")


def test_a_failed_linked_document_is_held_until_its_bytes_change_or_it_is_retried() -> None:
    failed = previous(LINKED, state="error")
    held = plan([Observed(LINKED, "f1")], failed)
    assert [p.action for p in held] == ["hold"] and unchanged(held, failed), "a sync must not retry it"
    assert plan([Observed(LINKED, "f2")], failed)[0].action == "extract"
    assert plan([Observed(LINKED, "f1")], failed, force_resource_ids=frozenset({"linked:d1"}))[0].action == "extract"
    assert plan([Observed(PDF, "f1")], previous(PDF, state="error"))[0].action == "extract", "attachments are retried"


def test_an_unchanged_linked_document_is_reused_like_an_attachment() -> None:
    prev = previous(LINKED)
    assert [p.action for p in plan([Observed(LINKED, "f1")], prev)] == ["reuse"]
