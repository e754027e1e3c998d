"""Table schemas of a vault: folders that hold a ``_table.yaml``.

A table is chosen by the identity written in its schema, never by its folder name or display
name, because the seed requires the References table to be the *configured* identity: a user may
rename the folder or the table and the notebooks attached to it must keep working.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.types import PipelineError

from .yamlload import load_yaml

log = logging.getLogger(__name__)

SCHEMA_FILE = "_table.yaml"
MAX_SCHEMA_BYTES = 256 * 1024

ATTACHMENT = "attachment"
URL = "url"
TEXT = "text"
TAGS = "tags"
AUTHOR = "author"
TYPE = "type"
DATE = "date"
FIELD_TYPES = frozenset({TEXT, TAGS, AUTHOR, ATTACHMENT, URL, TYPE, DATE})
# "file" is the other name the seed uses for an attachment field; it is folded into one type
# here so that no caller has to remember both spellings.
FIELD_TYPE_ALIASES = {"file": ATTACHMENT}


@dataclass(frozen=True)
class Table:
    """A table schema: its identity, display name, folder and ``{field_name: type}``.

    ``fields`` keeps the schema's order (the first text field is the fallback title) and holds
    canonical types (``file`` already folded into ``attachment``).
    """

    id: str
    name: str
    folder: Path
    fields: dict[str, str]

    def fields_of_type(self, *types: str) -> list[str]:
        """Names of the fields whose type is one of ``types``, in schema order."""
        return [name for name, kind in self.fields.items() if kind in types]


def _canonical_fields(raw: Any) -> dict[str, str]:
    """Field map with lower-case canonical types; entries that are not name→string are dropped."""
    if not isinstance(raw, dict):
        return {}
    fields: dict[str, str] = {}
    for name, kind in raw.items():
        if isinstance(name, str) and isinstance(kind, str):
            kind = kind.strip().lower()
            fields[name] = FIELD_TYPE_ALIASES.get(kind, kind)
    return fields


def _read_table(folder: Path) -> Table | None:
    """The table in ``folder``, or None when its schema is missing, unreadable or has no id."""
    schema_path = folder / SCHEMA_FILE
    try:
        with schema_path.open("rb") as handle:
            raw = handle.read(MAX_SCHEMA_BYTES + 1)
        if len(raw) > MAX_SCHEMA_BYTES:
            raise ValueError("schema file too large")
        data = load_yaml(raw.decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        log.warning("skipping table schema %s: %s", schema_path, exc)
        return None
    if not isinstance(data, dict) or data.get("id") in (None, ""):
        log.warning("skipping table schema %s: no id", schema_path)
        return None
    name = data.get("name")
    return Table(
        id=str(data["id"]),
        name=str(name) if name not in (None, "") else folder.name,
        folder=folder,
        fields=_canonical_fields(data.get("fields")),
    )


def list_tables(vault: Path) -> list[Table]:
    """Every table directly under ``vault``, sorted by folder name.

    Hidden folders (``.obsidian``, ``.git``…) are skipped, and so are symlinked folders whose real
    path leaves the vault: the vault is the boundary of what we read.
    """
    vault_real = vault.resolve()
    tables: list[Table] = []
    try:
        children = sorted(vault.iterdir())
    except OSError as exc:
        raise PipelineError("VAULT_UNREADABLE", f"cannot list the vault: {exc.strerror}") from exc
    for child in children:
        if child.name.startswith(".") or not child.is_dir():
            continue
        if child.is_symlink() and not child.resolve().is_relative_to(vault_real):
            continue
        table = _read_table(child)
        if table is not None:
            tables.append(table)
    return tables


def find_table(vault: Path, table_id: str) -> Table:
    """The table whose schema ``id`` equals ``table_id``.

    Two folders claiming one id is a vault error, not something to resolve by guessing.
    """
    matches = [table for table in list_tables(vault) if table.id == table_id]
    if not matches:
        raise PipelineError("TABLE_NOT_FOUND", f"no table with id {table_id[:100]!r} in the vault")
    if len(matches) > 1:
        folders = ", ".join(table.folder.name for table in matches[:5])
        raise PipelineError("TABLE_AMBIGUOUS", f"several folders claim table id {table_id[:100]!r}: {folders}")
    return matches[0]
