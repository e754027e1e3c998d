"""Records of a table: one Markdown file each, read through its YAML front matter only.

The body of a record is never evidence and never needed here, so a record is read line by line
up to the closing front-matter delimiter and the rest of the file is left on disk. That is why
this module does not use python-frontmatter, which reads the whole file and parses with the
slow pure-Python YAML loader. A file that cannot be read or whose front matter is not a YAML
mapping is skipped with a reason instead of failing the listing: one bad note must not hide the
whole catalogue.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .tables import TEXT, Table
from .yamlload import load_yaml

log = logging.getLogger(__name__)

RECORD_SUFFIX = ".md"
MAX_FRONT_MATTER_BYTES = 256 * 1024
_DELIMITER = "---"
_CLOSERS = frozenset({"---", "..."})


@dataclass(frozen=True)
class Record:
    """One record: its resource id, vault-relative posix path, display title and raw values.

    ``values`` is the front matter as parsed; ``Catalogue`` shares one instance between
    requests, so callers read it and never change it.
    """

    resource_id: str
    rel_path: str
    title: str
    values: dict[str, Any]
    is_template: bool


@dataclass(frozen=True)
class SkippedFile:
    """A record file left out of the catalogue, with a short reason for operators."""

    rel_path: str
    reason: str


@dataclass(frozen=True)
class RecordLoad:
    """The usable records of a table (sorted by path) and the files that were skipped."""

    records: list[Record]
    skipped: list[SkippedFile]


class MalformedRecord(ValueError):
    """The file exists but its front matter cannot be turned into record values."""


def read_front_matter(path: Path) -> dict[str, Any]:
    """The front-matter mapping of ``path``; ``{}`` when the file has none (a body-only note)."""
    with path.open("rb") as handle:
        first = handle.readline(MAX_FRONT_MATTER_BYTES)
        if _line(first.removeprefix(b"\xef\xbb\xbf")) != _DELIMITER:
            return {}
        lines: list[bytes] = []
        size = 0
        while True:
            line = handle.readline(MAX_FRONT_MATTER_BYTES)
            if not line:
                raise MalformedRecord("front matter is not closed")
            if _line(line) in _CLOSERS:
                break
            size += len(line)
            if size > MAX_FRONT_MATTER_BYTES:
                raise MalformedRecord("front matter is too large")
            lines.append(line)
    try:
        data = load_yaml(b"".join(lines).decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise MalformedRecord(f"front matter is not valid YAML: {type(exc).__name__}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MalformedRecord("front matter is not a mapping")
    return {key: value for key, value in data.items() if isinstance(key, str)}


def _line(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip()


def _scalar_text(value: Any) -> str:
    """A YAML scalar as display text ('' for missing values, lists and mappings)."""
    if value is None or isinstance(value, (list, dict, bool)):
        return ""
    return str(value).strip()


def title_field(table: Table) -> str | None:
    """The field that names a record: the text field called ``title``, else the first text field."""
    text_fields = table.fields_of_type(TEXT)
    if "title" in text_fields:
        return "title"
    return text_fields[0] if text_fields else None


def build_record(rel_path: str, values: dict[str, Any], table: Table) -> Record:
    """A record from its front matter; the id and title fall back to the path and file stem."""
    resource_id = _scalar_text(values.get("id")) or rel_path
    field = title_field(table)
    title = (_scalar_text(values.get(field)) if field else "") or Path(rel_path).stem
    template = values.get("template")
    is_template = template is True or (isinstance(template, str) and template.strip().lower() == "true")
    return Record(resource_id, rel_path, title, values, is_template)


def parse_record_file(vault_real: Path, vault: Path, table: Table, path: Path) -> Record | SkippedFile:
    """One record file turned into a ``Record``, or a ``SkippedFile`` saying why it cannot be."""
    rel_path = path.relative_to(vault).as_posix()
    try:
        if path.is_symlink() and not path.resolve().is_relative_to(vault_real):
            return SkippedFile(rel_path, "symlink leaves the vault")
        return build_record(rel_path, read_front_matter(path), table)
    except MalformedRecord as exc:
        return SkippedFile(rel_path, str(exc))
    except (OSError, RuntimeError) as exc:
        return SkippedFile(rel_path, f"unreadable: {getattr(exc, 'strerror', None) or type(exc).__name__}")


def record_names(table: Table) -> list[str]:
    """Names of the Markdown files directly in the table folder, sorted; hidden files skipped.

    ``os.scandir`` knows most file types without a ``stat`` per entry, which matters for
    folders of thousands of records.
    """
    try:
        with os.scandir(table.folder) as entries:
            return sorted(
                entry.name
                for entry in entries
                if entry.name.lower().endswith(RECORD_SUFFIX) and not entry.name.startswith(".") and entry.is_file()
            )
    except OSError as exc:
        log.warning("cannot list table folder %s: %s", table.folder, exc)
        return []


def record_files(table: Table) -> list[Path]:
    """The record files of ``table`` (``record_names``) as paths."""
    return [table.folder / name for name in record_names(table)]


Parser = Callable[[Path], Record | SkippedFile]


def collect(results: list[Record | SkippedFile]) -> RecordLoad:
    """Split parse results into records and skipped files; a repeated resource id keeps the first.

    Two files claiming one id would make selection ambiguous, so later ones are skipped (files
    come sorted by path, so which one wins is deterministic).
    """
    records: list[Record] = []
    skipped: list[SkippedFile] = []
    owner: dict[str, str] = {}
    for result in results:
        if isinstance(result, SkippedFile):
            skipped.append(result)
        elif result.resource_id in owner:
            skipped.append(SkippedFile(result.rel_path, f"duplicate id, also used by {owner[result.resource_id]}"))
        else:
            owner[result.resource_id] = result.rel_path
            records.append(result)
    return RecordLoad(records, skipped)


def read_records(vault: Path, table: Table, parse: Parser | None = None) -> RecordLoad:
    """All records of ``table`` plus the files skipped; ``parse`` lets a cache reuse results."""
    vault_real = vault.resolve()
    parse = parse or (lambda path: parse_record_file(vault_real, vault, table, path))
    return collect([parse(path) for path in record_files(table)])


def load_records(vault: Path, table: Table) -> list[Record]:
    """The records of ``table`` (templates included; callers decide), skipped files logged."""
    loaded = read_records(vault, table)
    for item in loaded.skipped:
        log.warning("skipping record %s: %s", item.rel_path, item.reason)
    return loaded.records
