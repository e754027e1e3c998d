"""A vault catalogue that re-parses only the record files that changed.

The selector is called on every keystroke of a search box, and a vault can hold thousands of
records; parsing every front matter each time would take seconds. Parsed results are kept per
file and reused while the file's (name, mtime_ns, size) is unchanged, so a warm listing costs
one directory scan and one ``stat`` per file.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .records import Record, RecordLoad, SkippedFile, collect, parse_record_file, record_names
from .selector import Selection, select_resources
from .tables import Table, find_table, list_tables
from .validation import validate_resource_ids

log = logging.getLogger(__name__)

_StatKey = tuple[int, int]
_Parsed = Record | SkippedFile
_Schema = tuple[tuple[str, str], ...]


def _stat_key(path: str) -> _StatKey | None:
    """What says a record file changed; ``None`` when it cannot be read (parsed every time)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@dataclass(frozen=True)
class _Listing:
    """One table's last listing: file stats and parse results by file name, and the result."""

    schema: _Schema
    stats: dict[str, _StatKey | None]
    parsed: dict[str, _Parsed]
    load: RecordLoad


class Catalogue:
    """Tables and records of one vault, with parsed records cached across calls.

    Safe to share between threads: each table's listing is replaced by a new one in one
    assignment, so a reader sees either the old or the new one, never a half-built one.
    """

    def __init__(self, vault: Path, *, allowlist: Sequence[str] = ()) -> None:
        self.vault = vault
        self.allowlist = tuple(allowlist)
        self._listings: dict[tuple[str, Path], _Listing] = {}
        self._skipped: dict[str, list[SkippedFile]] = {}

    def tables(self) -> list[Table]:
        """Every table of the vault (schemas are tiny, so they are read fresh each time)."""
        return list_tables(self.vault)

    def table(self, table_id: str) -> Table:
        """The table with identity ``table_id`` (``TABLE_NOT_FOUND`` otherwise)."""
        return find_table(self.vault, table_id)

    def load(self, table: Table) -> RecordLoad:
        """Records and skipped files of ``table``, parsing only new or changed files; when no
        file changed, the previous result itself (one directory scan and one ``stat`` per file,
        no path objects: this runs on every search to label hits with their record's title)."""
        key = (table.id, table.folder)
        schema = tuple(table.fields.items())
        folder = os.fspath(table.folder)
        stats = {name: _stat_key(os.path.join(folder, name)) for name in record_names(table)}
        cached = self._listings.get(key)
        if cached is not None and cached.schema != schema:  # a record's title depends on the schema
            cached = None
        if cached is not None and cached.stats == stats and None not in stats.values():
            return cached.load
        vault_real = self.vault.resolve()
        parsed: dict[str, _Parsed] = {}
        for name, stat_key in stats.items():
            unchanged = cached is not None and stat_key is not None and cached.stats.get(name) == stat_key
            parsed[name] = cached.parsed[name] if unchanged else parse_record_file(  # type: ignore[union-attr]
                vault_real, self.vault, table, table.folder / name)
        loaded = collect(list(parsed.values()))
        self._listings[key] = _Listing(schema, stats, parsed, loaded)
        self._report(table, loaded.skipped)
        return loaded

    def _report(self, table: Table, skipped: list[SkippedFile]) -> None:
        """Log skipped files once, when they first appear, not on every listing."""
        known = set(self._skipped.get(table.id, []))
        for item in skipped:
            if item not in known:
                log.warning("table %s: skipping record %s: %s", table.id, item.rel_path, item.reason)
        self._skipped[table.id] = skipped

    def records(self, table: Table) -> list[Record]:
        """The records of ``table``, templates included."""
        return list(self.load(table).records)

    def select(
        self,
        table_id: str,
        *,
        q: str | None = None,
        type: str | None = None,  # noqa: A002 - the API's filter name
        author: str | None = None,
        tag: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> Selection:
        """``select_resources`` over the current records of table ``table_id``."""
        table = self.table(table_id)
        return select_resources(
            self.records(table), table, q=q, type=type, author=author, tag=tag,
            page=page, per_page=per_page, allowlist=self.allowlist,
        )

    def validate(self, table_id: str, ids: Sequence[str]) -> dict[str, Record]:
        """``validate_resource_ids`` against the current records of table ``table_id``."""
        table = self.table(table_id)
        return validate_resource_ids(self.records(table), table, ids, allowlist=self.allowlist)
