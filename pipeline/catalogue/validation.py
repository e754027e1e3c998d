"""Validation of the resource ids of a create or add-source request.

The selector only *offers* usable records; a client can still send any id, so the same rules
(no templates, no unknown ids, at least one usable source, at most a thousand per request) are
enforced again before anything is stored or queued.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipeline.types import PipelineError

from .records import Record
from .sources import record_sources
from .tables import Table

MAX_RESOURCES_PER_REQUEST = 1000
_NAMED_IN_MESSAGE = 5


def _refuse(code: str, problem: str, ids: list[str]) -> PipelineError:
    named = ", ".join(repr(resource_id[:100]) for resource_id in ids[:_NAMED_IN_MESSAGE])
    more = f" and {len(ids) - _NAMED_IN_MESSAGE} more" if len(ids) > _NAMED_IN_MESSAGE else ""
    return PipelineError(code, f"{problem}: {named}{more}")


def validate_resource_ids(
    records: Iterable[Record], table: Table, ids: Sequence[str], *, allowlist: Sequence[str] = ()
) -> dict[str, Record]:
    """The requested records by id, in request order and without repeats, or a ``PipelineError``.

    Unknown ids are reported first, then templates, then records without usable sources, each
    error naming the first few offending ids.
    """
    if len(ids) > MAX_RESOURCES_PER_REQUEST:
        raise PipelineError("TOO_MANY_RESOURCES", f"at most {MAX_RESOURCES_PER_REQUEST} resources per request")
    by_id = {record.resource_id: record for record in records}
    wanted = list(dict.fromkeys(str(resource_id) for resource_id in ids))
    unknown = [resource_id for resource_id in wanted if resource_id not in by_id]
    if unknown:
        raise _refuse("RESOURCE_NOT_FOUND", "unknown resource ids", unknown)
    templates = [resource_id for resource_id in wanted if by_id[resource_id].is_template]
    if templates:
        raise _refuse("RESOURCE_IS_TEMPLATE", "template records cannot be notebook resources", templates)
    empty = [rid for rid in wanted if not record_sources(by_id[rid], table, allowlist=allowlist)]
    if empty:
        raise _refuse("RESOURCE_HAS_NO_SOURCES", "records without attachment or public URL values", empty)
    return {resource_id: by_id[resource_id] for resource_id in wanted}
