"""The knowledge-base sync's comparison (pipeline/folder_sync.py): modified times decide."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from pipeline.connectors.base import RemoteFile
from pipeline.folder_sync import KnownDocument, plan_folder

SEEN = datetime(2026, 11, 30, 10, 0, 0, 123000)


def remote(file_id: str, modified: datetime) -> RemoteFile:
    return RemoteFile(file_id, f"{file_id}.pdf", modified, 10, "application/pdf")


def test_unchanged_files_are_skipped_changed_and_new_ones_downloaded_missing_ones_gone() -> None:
    known = [KnownDocument("d1", "a", SEEN), KnownDocument("d2", "b", SEEN), KnownDocument("d3", "c", SEEN)]
    listed = [
        remote("a", SEEN.replace(tzinfo=UTC)),
        remote("b", SEEN.replace(tzinfo=UTC) + timedelta(seconds=1)),
        remote("new", SEEN.replace(tzinfo=UTC)),
    ]
    plan = plan_folder(known, listed)
    assert plan.unchanged == ["d1"]
    assert [f.id for f in plan.download] == ["b", "new"]
    assert plan.gone == ["d3"]


def test_the_same_instant_in_another_zone_is_unchanged_and_an_older_time_is_a_change() -> None:
    known = [KnownDocument("d1", "a", SEEN), KnownDocument("d2", "b", SEEN)]
    paris = timezone(timedelta(hours=1))
    listed = [remote("a", SEEN.replace(tzinfo=UTC).astimezone(paris)), remote("b", SEEN.replace(tzinfo=UTC) - timedelta(days=1))]
    plan = plan_folder(known, listed)
    assert plan.unchanged == ["d1"] and [f.id for f in plan.download] == ["b"], "a file put back to an older version changed"


def test_an_empty_listing_loses_every_document_and_a_forgotten_time_downloads_again() -> None:
    assert plan_folder([KnownDocument("d1", "a", SEEN)], []).gone == ["d1"]
    forced = plan_folder([KnownDocument("d1", "a", None)], [remote("a", SEEN.replace(tzinfo=UTC))])
    assert [f.id for f in forced.download] == ["a"]
