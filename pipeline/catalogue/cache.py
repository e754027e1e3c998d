"""A vault catalogue that re-parses only the record files that changed.

The selector is called on every keystroke of a search box, and a vault can hold thousands of
records; parsing every front matter each time would take seconds. Parsed results are kept per
file and reused while the file's (path, mtime_ns, size) is unchanged, so a warm listing costs
one directory scan and one ``stat`` per file.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from .records import Record, RecordLoad, SkippedFile, parse_record_file, read_records
from .selector import Selection, select_resources
from .tables import Table, find_table, list_tables
from .validation import validate_resource_ids

log = logging.getLogger(__name__)

_StatKey = tuple[int, int]
_Parsed = Record | SkippedFile
_Schema = tuple[tuple[str, str], ...]


class Catalogue:
    """Tables and records of one vault, with parsed records cached across calls.

    Safe to share between threads: each table's cache is replaced by a new dict in one
    assignment, so a reader sees either the old or the new one, never a half-built one.
    """

    def __init__(self, vault: Path, *, allowlist: Sequence[str] = ()) -> None:
        self.vault = vault
        self.allowlist = tuple(allowlist)
        self._files: dict[tuple[str, Path], tuple[_Schema, dict[Path, tuple[_StatKey, _Parsed]]]] = {}
        self._skipped: dict[str, list[SkippedFile]] = {}

    def tables(self) -> list[Table]:
        """Every table of the vault (schemas are tiny, so they are read fresh each time)."""
        return list_tables(self.vault)

    def table(self, table_id: str) -> Table:
        """The table with identity ``table_id`` (``TABLE_NOT_FOUND`` otherwise)."""
        return find_table(self.vault, table_id)

    def load(self, table: Table) -> RecordLoad:
        """Records and skipped files of ``table``, parsing only new or changed files."""
        key = (table.id, table.folder)
        schema = tuple(table.fields.items())
        cached_schema, previous = self._files.get(key, (schema, {}))
        if cached_schema != schema:  # a record's title depends on which field is the title
            previous = {}
        current: dict[Path, tuple[_StatKey, _Parsed]] = {}
        vault_real = self.vault.resolve()

        def parse(path: Path) -> _Parsed:
            try:
                info = os.stat(path)
            except OSError:
                return parse_record_file(vault_real, self.vault, table, path)
            stat_key = (info.st_mtime_ns, info.st_size)
            hit = previous.get(path)
            result = hit[1] if hit and hit[0] == stat_key else parse_record_file(vault_real, self.vault, table, path)
            current[path] = (stat_key, result)
            return result

        loaded = read_records(self.vault, table, parse)
        self._files[key] = (schema, current)
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
        return self.load(table).records

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
