"""Revisions' vector matrices as files next to the database, memory-mapped by whoever searches.

A revision's vectors are read from its ``chunk_vectors`` rows once, on the database host (by the
coordinator right after activation, or by the first search that finds no file), and kept as
``.npy`` files in ``LOCAL_DATA/system/vectors/<revision>.<embedder>/``. From then on a process maps
them (``numpy.load(mmap_mode="r")``) instead of reading and joining every row again, so a restart
or a cache eviction costs opening a file, not a scan of the table (24 s at 1M chunks from rows).
Revisions are immutable, so a file never goes stale; the sweeper deletes those of deleted
revisions, and of revisions another one replaced as active (``REPLACED_GRACE``). The files are
derived data: backups leave them out, and the sweeper has the coordinator write those of active
revisions again (``wanting``). A revision of ``index_min_chunks`` or more also gets its
approximate index there (storage.vector_index), and every revision its own full-text index
(storage.lexical_index), both built by the coordinator only.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, aliased
from storage.usearch_index import Index

from pipeline.embedder import Embedder
from storage import lexical_index, vector_index
from storage.models import Notebook, Revision, utcnow
from storage.vector_cache import VectorMatrix, load_matrix

log = logging.getLogger(__name__)

_NAME = re.compile(r"[0-9A-Za-z-]{1,64}")
_UNSAFE = re.compile(r"[^0-9A-Za-z._-]")
_TEMPORARY = ".tmp-"
# A folder being written is left alone this long by the sweeper (a 1M-chunk matrix takes ~20 s).
_WRITING_GRACE_SECONDS = 3600
_ARRAYS = ("pks", "codes", "vectors")
# Every search and chat turn reads its notebook's active revision (a turn pins it as it starts), and
# a citation reads its chunk from the database, so a revision that another replaced as active is
# searched only by what began before: its files are kept this long for those, then deleted. At 1M
# chunks a revision's files weigh ~2 GB (vectors, full-text index, approximate index), and kept
# revisions (the last completed ones, those a conversation cited) would each hold a copy.
REPLACED_GRACE = timedelta(minutes=10)


class VectorFiles:
    def __init__(self, root: Path, index_min_chunks: int = 200_000) -> None:
        self.root = root
        self.index_min_chunks = index_min_chunks  # revisions this big get an approximate index too

    def folder(self, revision_id: str, embedder: Embedder) -> Path:
        if not _NAME.fullmatch(revision_id):
            raise ValueError(f"not a revision id: {revision_id!r}")
        return self.root / f"{revision_id}.{_UNSAFE.sub('_', embedder.name)}"

    def load(self, session: Session, revision_id: str, embedder: Embedder) -> VectorMatrix:
        """The revision's matrix, mapped from its files; built from the rows (and kept) when there
        are none yet, or when they cannot be read."""
        folder = self.folder(revision_id, embedder)
        try:
            return _read(folder)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as err:
            log.warning("rebuilding the unreadable vector files %s: %s", folder.name, err)
            shutil.rmtree(folder, ignore_errors=True)
        matrix = load_matrix(session, revision_id, embedder)
        self._write(folder, matrix)
        return matrix

    def ensure(self, session: Session, revision_id: str, embedder: Embedder) -> None:
        """Write the revision's files unless they exist: the vector arrays, its own full-text index
        (storage.lexical_index), and its approximate index when it is big enough (the coordinator,
        once a revision is active: these take ~10 s per 100k chunks, which no search should wait
        for)."""
        folder = self.folder(revision_id, embedder)
        if not folder.is_dir():
            self._write(folder, load_matrix(session, revision_id, embedder))
        if not folder.is_dir():
            return
        lexical = folder / lexical_index.FILE
        if not lexical.is_file():
            self._write_beside(lexical, lambda partial: lexical_index.write(session, revision_id, partial))
        for older in lexical_index.older_files(folder):
            older.unlink(missing_ok=True)
        index = folder / vector_index.FILE
        if index.is_file():
            return
        vectors = np.load(folder / "vectors.npy", mmap_mode="r", allow_pickle=False)
        if len(vectors) >= self.index_min_chunks:
            self._write_beside(index, lambda partial: vector_index.build(vectors, partial))

    def lexical_file(self, revision_id: str, embedder: Embedder) -> Path | None:
        """The revision's own full-text index, once the coordinator has written it."""
        path = self.folder(revision_id, embedder) / lexical_index.FILE
        return path if path.is_file() else None

    @staticmethod
    def _write_beside(path: Path, write: Callable[[Path], object]) -> None:
        """``write`` a partial file beside ``path``, then rename it into place: readers see the
        whole file or none."""
        partial = path.parent / f"{_TEMPORARY}{uuid.uuid4().hex}"
        try:
            write(partial)
            partial.rename(path)
        finally:
            partial.unlink(missing_ok=True)

    def _write(self, folder: Path, matrix: VectorMatrix) -> None:
        """Write beside, then rename into place: a reader sees all the files or none. Best effort:
        a full disk leaves the matrix served from rows, as before these files existed."""
        temporary = self.root / f"{_TEMPORARY}{folder.name}-{uuid.uuid4().hex}"
        try:
            temporary.mkdir(parents=True)
            for name in _ARRAYS:
                np.save(temporary / f"{name}.npy", getattr(matrix, name), allow_pickle=False)
            (temporary / "resources.json").write_text(json.dumps(matrix.resources), encoding="utf-8")
            temporary.rename(folder)
        except OSError as err:  # also: another process renamed its copy into place first
            if not folder.is_dir():
                log.warning("could not keep the vector files %s: %s", folder.name, err)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)

    def wanting(self, session: Session, embedder: Embedder) -> list[str]:
        """Active revisions whose files, or the indexes they should have, are missing and not being
        written: after a restore (backups leave the files out), a lost ``ingest.write_vectors``, or
        an index found unreadable. The sweeper sends them to the coordinator again."""
        active = session.scalars(select(Notebook.active_revision_id).where(Notebook.active_revision_id.is_not(None)))
        being_written = {entry.name for entry in self._fresh(self.root)} if self.root.is_dir() else set()
        wanting = []
        for revision_id in active:
            folder = self.folder(revision_id, embedder)
            if not folder.is_dir():
                if not any(name.startswith(f"{_TEMPORARY}{folder.name}-") for name in being_written):
                    wanting.append(revision_id)
            elif not self._fresh(folder) and (
                not (folder / lexical_index.FILE).is_file()
                or (not (folder / vector_index.FILE).is_file() and self._rows(folder) >= self.index_min_chunks)
            ):
                wanting.append(revision_id)
        return wanting

    @staticmethod
    def _rows(folder: Path) -> int:
        """0 for torn files: the next search that loads them rebuilds them from rows."""
        try:
            return len(np.load(folder / "pks.npy", mmap_mode="r", allow_pickle=False))
        except (OSError, ValueError):
            return 0

    @staticmethod
    def _fresh(folder: Path) -> list[Path]:
        """Partial writes in ``folder`` young enough to be in progress."""
        stale_before = time.time() - _WRITING_GRACE_SECONDS
        return [
            entry for entry in folder.iterdir() if entry.name.startswith(_TEMPORARY) and entry.stat().st_mtime >= stale_before
        ]

    def delete_unreferenced(self, session: Session, now: datetime | None = None) -> int:
        """Delete the files no search will read again: those of revisions that no longer exist or
        that another revision replaced as their notebook's active one over ``REPLACED_GRACE``
        ago, and abandoned partial writes."""
        if not self.root.is_dir():
            return 0
        entries = [entry for entry in self.root.iterdir() if entry.is_dir()]
        fresh = set(self._fresh(self.root))
        doomed = [entry for entry in entries if entry.name.startswith(_TEMPORARY) and entry not in fresh]
        revision_of = {entry: entry.name.split(".", 1)[0] for entry in entries if not entry.name.startswith(_TEMPORARY)}
        ids = set(revision_of.values())
        kept = _searchable(session, ids, (now or utcnow()) - REPLACED_GRACE) if ids else set()
        doomed += [entry for entry, revision_id in revision_of.items() if revision_id not in kept]
        for entry in doomed:
            shutil.rmtree(entry, ignore_errors=True)
        return len(doomed)


def _searchable(session: Session, ids: set[str], replaced_before: datetime) -> set[str]:
    """Of ``ids``, the revisions a search may still read: active ones, those of a notebook with
    none, and those replaced as active at or after ``replaced_before`` (when their successor was
    activated)."""
    successor = aliased(Revision)
    rows = session.execute(
        select(Revision.id, Notebook.active_revision_id, successor.completed_at)
        .join(Notebook, Notebook.id == Revision.notebook_id)
        .outerjoin(successor, successor.id == Notebook.active_revision_id)
        .where(Revision.id.in_(ids))
    )
    return {
        revision_id for revision_id, active_id, replaced_at in rows
        if active_id in (None, revision_id) or replaced_at is None or replaced_at >= replaced_before
    }


def _read(folder: Path) -> VectorMatrix:
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
    resources = json.loads((folder / "resources.json").read_text(encoding="utf-8"))
    if not (len(arrays["pks"]) == len(arrays["codes"]) == len(arrays["vectors"])):
        raise ValueError("the arrays' lengths differ")
    return VectorMatrix(resources=resources, index=_index(folder, len(arrays["pks"])), **arrays)


def _index(folder: Path, rows: int) -> Index | None:
    """The folder's approximate index, if it has a readable one. One that cannot be read is removed
    and the mapped arrays are searched exactly meanwhile: they are sound, and rebuilding them from
    rows would cost ~25 s at 1M chunks for nothing; the sweeper has the coordinator index again."""
    path = folder / vector_index.FILE
    if not path.is_file():
        return None
    try:
        index = vector_index.open_view(path)
        if len(index) != rows:
            raise ValueError(f"the index has {len(index)} rows, the arrays {rows}")
        return index
    except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: usearch's, on a torn file
        log.warning("searching %s exactly until it is indexed again: %s", folder.name, err)
        path.unlink(missing_ok=True)
        return None
