"""Packs: immutable index files that every revision serving their source versions shares.

A revision serves a set of source versions (docs/decisions/0011), and a refresh changes few of
them. Writing each revision's files whole again cost a refresh of a 1M-chunk notebook ~25 s of
reading vectors, ~220 s of building its approximate index and ~70 s of full-text index, for rows
it had already indexed. So they are kept in packs, ``LOCAL_DATA/system/vectors/_packs/<id>/``: a
matrix of the rows of some source versions (each row says which), their full-text index
(storage.lexical_index), and their approximate index when it is big enough. A revision's
folder names the packs it reads and the versions of theirs it no longer serves
(storage.vector_files); a refresh writes one pack of what changed, as Lucene writes a segment.

``plan`` bounds what a search reads: a pack of which less than half is still served is not kept,
and while a revision would have more than ``MAX_PACKS`` the smallest ones are written again into
its new pack (size-tiered merging: the big first pack stays, small refreshes merge with each
other).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from storage.usearch_index import Index

from storage import vector_index
from storage.files import durable_replace
from storage.vector_cache import VectorMatrix

log = logging.getLogger(__name__)

FOLDER = "_packs"  # "_" cannot start a revision's folder name (storage.vector_files)
MAX_PACKS = 8
TEMPORARY = ".tmp-"
# What reading a torn pack raises: a truncated array (``ValueError``), an empty one, as a power loss
# leaves a file whose name was written before its bytes (``EOFError``), a key file cut short.
DAMAGE = (ValueError, KeyError, EOFError)
_ARRAYS = ("pks", "codes", "vectors", "versions")
_KEYS = "keys.json"


@dataclass(frozen=True)
class Summary:
    """A pack's rows per source version, which is all that planning needs."""

    id: str
    rows: Counter[str]

    def served(self, versions: Collection[str]) -> int:
        return sum(count for key, count in self.rows.items() if key in versions)


def plan(needed: Collection[str], previous: Iterable[Summary]) -> tuple[list[Summary], set[str]]:
    """The packs to keep of ``previous`` for a revision serving the source versions ``needed``,
    and the versions its new pack must hold; a version is taken from the first pack holding it."""
    kept: list[Summary] = []
    covered: set[str] = set()
    for pack in previous:
        served = pack.served(set(needed) - covered)
        if served and 2 * served >= sum(pack.rows.values()):
            kept.append(pack)
            covered |= pack.rows.keys() & set(needed)
    kept.sort(key=lambda pack: pack.served(needed), reverse=True)
    fresh = set(needed) - covered
    while kept and len(kept) + bool(fresh) > MAX_PACKS:
        fresh |= kept.pop().rows.keys() & set(needed)
    return kept, fresh


def write(root: Path, matrix: VectorMatrix, writer: str) -> str:
    """Write ``matrix`` as a new pack for the revision ``writer``; its id. Beside, then renamed
    into place: a reader sees the whole pack or none. The partial pack's name starts with
    ``writing(writer)``, so the sweeper can tell whose write is in progress."""
    pack_id = uuid.uuid4().hex
    temporary = root / f"{writing(writer)}{pack_id}"
    try:
        temporary.mkdir(parents=True)
        for name in _ARRAYS:
            np.save(temporary / f"{name}.npy", getattr(matrix, name), allow_pickle=False)
        keys = {"resources": matrix.resources, "versions": list(matrix.version_keys)}
        (temporary / _KEYS).write_text(json.dumps(keys), encoding="utf-8")
        durable_replace(temporary, root / pack_id)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return pack_id


def writing(writer: str) -> str:
    """How the partial packs of the revision ``writer`` are named."""
    return f"{TEMPORARY}{writer}."


def touch(folder: Path) -> None:
    """Mark a pack as just named: the sweeper leaves an unnamed pack alone for a while after."""
    os.utime(folder)


def read(folder: Path) -> VectorMatrix:
    """The pack in ``folder``, its arrays mapped (``OSError`` when it cannot be read now, one of
    ``DAMAGE`` when it is torn)."""
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
    keys = json.loads((folder / _KEYS).read_text(encoding="utf-8"))
    rows = len(arrays["pks"])
    if not all(len(array) == rows for array in arrays.values()):
        raise ValueError("the arrays' lengths differ")
    return VectorMatrix(
        resources=keys["resources"], version_keys=tuple(keys["versions"]), index=_index(folder, rows), **arrays
    )


def summary(folder: Path) -> Summary:
    keys = json.loads((folder / _KEYS).read_text(encoding="utf-8"))["versions"]
    counts = np.bincount(np.load(folder / "versions.npy", mmap_mode="r", allow_pickle=False), minlength=len(keys))
    return Summary(folder.name, Counter(dict(zip(keys, counts.tolist()))))


def served_rows(codes: np.ndarray, keys: Sequence[str], unserved: Collection[str]) -> np.ndarray | None:
    """Which rows a revision serves, given each row's version (``codes`` into ``keys``) and the
    versions it does not serve; ``None`` when it serves them all."""
    left_out = [code for code, key in enumerate(keys) if key in unserved]
    return ~np.isin(codes, left_out) if left_out else None


def rows(folder: Path) -> int:
    """0 for a torn pack: the next search that loads it sets it aside and writes another."""
    try:
        return len(np.load(folder / "pks.npy", mmap_mode="r", allow_pickle=False))
    except (OSError, *DAMAGE):
        return 0


def _index(folder: Path, rows: int) -> Index | None:
    """The pack's approximate index, if it has a readable one. One that is damaged is removed
    and the mapped arrays are searched exactly meanwhile: they are sound, and rebuilding them from
    rows would cost ~25 s at 1M chunks for nothing; the sweeper has the coordinator index again.
    One that cannot be opened this time (no file handle left) stays, for the next load."""
    path = folder / vector_index.FILE
    if not path.is_file():
        return None
    try:
        index = vector_index.open_view(path)
        if len(index) != rows:
            raise ValueError(f"the index has {len(index)} rows, the arrays {rows}")
        return index
    except OSError as err:
        log.warning("searching pack %s exactly this time: %s", folder.name, err)
        return None
    except (ValueError, RuntimeError) as err:  # RuntimeError: usearch's, on a torn file
        log.warning("searching pack %s exactly until it is indexed again: %s", folder.name, err)
        path.unlink(missing_ok=True)
        return None
