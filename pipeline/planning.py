"""Decide, per source, whether a new revision reuses the last representation or extracts again.

Pure: it compares fingerprints and timestamps handed in by the caller, so every rule here is
unit-testable without files, network or database.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pipeline.types import FILE_KINDS, SourceRef

SourceKey = tuple[str, str, str]  # (resource_id, field, value)
REUSABLE_STATES = ("available", "stale")


def key_of(ref: SourceRef) -> SourceKey:
    return (ref.resource_id, ref.field, ref.value)


@dataclass(frozen=True)
class PreviousSource:
    """What the active revision knows about a source."""

    source_id: str
    state: str
    fingerprint: str | None
    checked_at: datetime | None
    etag: str | None = None
    last_modified: str | None = None
    media_fingerprint: str | None = None
    content_hash: str | None = None
    file_size: int | None = None
    file_mtime_ns: int | None = None
    resource_title: str | None = None
    extraction_key: str | None = None
    chunking: str | None = None


@dataclass(frozen=True)
class Observed:
    """A source as it is now, before any extraction (URLs: known only after a fetch)."""

    ref: SourceRef
    fingerprint: str | None = None
    file_size: int | None = None
    file_mtime_ns: int | None = None
    resource_title: str | None = None


@dataclass(frozen=True)
class PlannedSource:
    ref: SourceRef
    # reuse: unchanged, carried over; keep: carried over as it was, unchecked (a per-resource retry
    # leaves every other source alone, even one that may have changed); hold: a linked document
    # that failed and did not change, carried over in error (only an explicit retry tries it
    # again); extract: made anew.
    action: Literal["reuse", "keep", "hold", "extract"]
    fingerprint: str | None = None
    previous: PreviousSource | None = None
    validators: dict[str, str] = field(default_factory=dict)
    file_size: int | None = None
    file_mtime_ns: int | None = None
    resource_title: str | None = None
    # A cached extraction of the same bytes: the extract step uses it instead of reading them.
    cached_extraction: str | None = None


def plan_sources(
    current: Iterable[Observed],
    previous: dict[SourceKey, PreviousSource],
    *,
    now: datetime,
    url_ttl_seconds: int,
    chunking: str,
    force_resource_ids: frozenset[str] = frozenset(),
) -> list[PlannedSource]:
    """Plan every currently observed source against the active revision's ``previous`` sources.

    - a forced resource (per-resource retry) is always extracted, without validators, and every
      other source that has evidence keeps it as it is: not fetched, not re-chunked, its last
      check's time and fingerprint carried over, so the next refresh still sees what is due or
      changed (an attachment whose bytes are the same is plainly reused: its new stat is kept);
    - an attachment whose bytes did not change reuses its chunks;
    - a URL checked less than ``url_ttl_seconds`` ago reuses its chunks; an older one is fetched
      again with its stored validators, so an unchanged page costs a 304, not an extraction;
    - a source whose last attempt failed is tried again, except a linked folder's document whose
      bytes did not change: a sync does not retry it (the knowledge-base sync's rule), a retry of
      that resource does;
    - a source whose chunks were made with another ``chunking`` recipe than the current one is
      chunked again from its cached extraction (a due URL is fetched in full, without validators:
      a 304 would leave the old chunks; its unchanged bytes still find their cached extraction;
      a due recording is probed with its media fingerprint, and chunked again from its cached
      extraction when that did not move).
    """
    plans = []
    ttl = timedelta(seconds=url_ttl_seconds)
    for seen in current:
        ref, fingerprint = seen.ref, seen.fingerprint
        prev = previous.get(key_of(ref))
        usable = prev is not None and prev.state in REUSABLE_STATES
        stat = {
            "file_size": seen.file_size, "file_mtime_ns": seen.file_mtime_ns, "resource_title": seen.resource_title,
        }
        forced = ref.resource_id in force_resource_ids
        if not forced and ref.kind == "linked" and prev is not None and prev.state == "error" and prev.fingerprint == fingerprint:
            plans.append(PlannedSource(ref, "hold", fingerprint, prev, **stat))
            continue
        if forced or not usable:
            plans.append(PlannedSource(ref, "extract", fingerprint, prev, **stat))
            continue
        if force_resource_ids:
            same_bytes = ref.kind in FILE_KINDS and fingerprint is not None and prev.fingerprint == fingerprint
            plans.append(PlannedSource(ref, "reuse" if same_bytes else "keep", prev.fingerprint, prev, **stat))
            continue
        same_recipe = prev.chunking == chunking
        if ref.kind in FILE_KINDS and fingerprint is not None and prev.fingerprint == fingerprint:
            plans.append(_unchanged(ref, fingerprint, prev, same_recipe, stat))
        elif ref.kind == "url" and prev.checked_at is not None and now - prev.checked_at < ttl:
            plans.append(_unchanged(ref, prev.fingerprint, prev, same_recipe, stat))
        elif ref.kind == "url" and not same_recipe and prev.media_fingerprint:
            # A recording is probed, not downloaded, to be checked: unchanged, it is chunked again
            # from its cached extraction; changed, it is downloaded (and its bytes may be cached).
            plans.append(PlannedSource(
                ref, "extract", fingerprint, prev, {"media_fingerprint": prev.media_fingerprint},
                cached_extraction=prev.extraction_key, **stat,
            ))
        elif ref.kind == "url":
            validators = _validators(prev) if same_recipe else {}
            plans.append(PlannedSource(ref, "extract", fingerprint, prev, validators, **stat))
        else:
            plans.append(PlannedSource(ref, "extract", fingerprint, prev, **stat))
    return plans


def _unchanged(
    ref: SourceRef, fingerprint: str | None, prev: PreviousSource, same_recipe: bool, stat: dict[str, Any]
) -> PlannedSource:
    if same_recipe:
        return PlannedSource(ref, "reuse", fingerprint, prev, **stat)
    return PlannedSource(ref, "extract", fingerprint, prev, cached_extraction=prev.extraction_key, **stat)


def touched(plans: Iterable[PlannedSource]) -> list[PlannedSource]:
    """Reused attachments whose file was touched (size or mtime moved, bytes unchanged). Their
    new stat must be remembered: the next check compares with it and would otherwise hash the
    file again, at every opening and question, forever."""
    return [
        p for p in plans
        if p.action == "reuse" and p.ref.kind == "attachment" and p.previous is not None and p.file_size is not None
        and (p.previous.file_size, p.previous.file_mtime_ns) != (p.file_size, p.file_mtime_ns)
    ]


def _validators(prev: PreviousSource) -> dict[str, str]:
    """What a conditional re-fetch sends (ETag, Last-Modified) or compares (the body's hash, a
    recording's media fingerprint)."""
    pairs = (
        ("etag", prev.etag), ("last_modified", prev.last_modified), ("content_hash", prev.content_hash),
        ("media_fingerprint", prev.media_fingerprint),
    )
    return {name: value for name, value in pairs if value}


def unchanged(plans: list[PlannedSource], previous: dict[SourceKey, PreviousSource]) -> bool:
    """True when a new revision would equal the active one: every source reused (or held in its
    error) under the same record title (the title is indexed with the chunks), none added or gone."""
    return (
        all(p.action in ("reuse", "hold") and p.previous is not None and p.previous.resource_title == p.resource_title
            for p in plans)
        and {key_of(p.ref) for p in plans} == set(previous)
    )


FIRST_RETRY = timedelta(minutes=1)
LONGEST_RETRY = timedelta(hours=24)


def retry_delay(failures: int) -> timedelta:
    """How long an opening waits before trying a resource that failed ``failures`` times in a
    row: one minute, doubling up to a day. An explicit refresh does not wait."""
    return min(FIRST_RETRY * 2 ** min(max(failures - 1, 0), 20), LONGEST_RETRY)

