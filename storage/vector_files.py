"""Revisions' vectors as files next to the database, memory-mapped by whoever searches.

A revision's vectors are read from its ``chunk_vectors`` rows once, on the database host (by the
coordinator right after activation, or by the first search that finds no files), and kept in packs
(storage.vector_packs) that later revisions share for the source versions they did not change. A
revision's folder, ``LOCAL_DATA/system/vectors/<revision>.<embedder>/``, holds ``packs.json``: the
packs it reads, and the versions of theirs it does not serve. From then on a process maps them
(``numpy.load(mmap_mode="r")``) instead of reading and joining every row again, so a restart or a
cache eviction costs opening files, not a scan of the table (24 s at 1M chunks from rows).
Revisions and packs are immutable, so a file never goes stale; the sweeper deletes the folders of
deleted revisions and of revisions another one replaced as active (``REPLACED_GRACE``), then the
packs no folder names. The files are derived data: backups leave them out, and the sweeper has the
coordinator write those of active revisions again (``wanting``). Every pack also gets its full-text
index (storage.lexical_index), and a pack of ``index_min_chunks`` or more rows its approximate
index (storage.vector_index), both built by the coordinator only.
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

from pipeline.embedder import Embedder
from storage import lexical_index, vector_index, vector_packs
from storage.files import durable_replace
from storage.models import Notebook, Revision, Source, utcnow
from storage.vector_cache import Part, RevisionVectors, load_matrix, version_key

log = logging.getLogger(__name__)

_NAME = re.compile(r"[0-9A-Za-z-]{1,64}")
_UNSAFE = re.compile(r"[^0-9A-Za-z._-]")
_TEMPORARY = vector_packs.TEMPORARY
MANIFEST = "packs.json"
# What a revision's folder held before packs: its own arrays, deleted once it names its packs.
_FORMER = ("pks.npy", "codes.npy", "vectors.npy", "resources.json", vector_index.FILE)
# A pack or folder being written is left alone this long by the sweeper (a 1M-chunk matrix takes ~20 s).
_WRITING_GRACE_SECONDS = 3600
# A pack just written is named by its revision's folder a moment later: until then the sweeper
# must not take it for one that no folder names any more.
_UNNAMED_GRACE_SECONDS = 600
# Every search and chat turn reads its notebook's active revision (a turn pins it as it starts), and
# a citation reads its chunk from the database, so a revision that another replaced as active is
# searched only by what began before: its files are kept this long for those, then deleted. At 1M
# chunks a revision's files weigh ~2 GB (vectors, full-text index, approximate index), and kept
# revisions (the last completed ones, those a conversation cited) would each hold a copy.
REPLACED_GRACE = timedelta(minutes=10)


class Damaged(Exception):
    """A revision's files are not whole: its manifest, or the pack ``pack`` (a torn write, a
    truncated file), as opposed to a passing failure to read them (``OSError``)."""

    def __init__(self, pack: Path | None, message: str) -> None:
        super().__init__(message)
        self.pack = pack


class VectorFiles:
    def __init__(self, root: Path, index_min_chunks: int = 200_000) -> None:
        self.root = root
        self.packs = root / vector_packs.FOLDER
        self.index_min_chunks = index_min_chunks  # packs this big get an approximate index too

    def folder(self, revision_id: str, embedder: Embedder) -> Path:
        if not _NAME.fullmatch(revision_id):
            raise ValueError(f"not a revision id: {revision_id!r}")
        return self.root / f"{revision_id}.{_UNSAFE.sub('_', embedder.name)}"

    def load(self, session: Session, revision_id: str, embedder: Embedder) -> RevisionVectors:
        """The revision's vectors, mapped from its packs; written first (sharing the packs of its
        notebook's last revision) when it names none yet or one is damaged, and read from rows when
        the files cannot be read this time or written."""
        folder = self.folder(revision_id, embedder)
        try:
            return self._read(folder)
        except FileNotFoundError:  # no folder yet, or a pack it names is gone: name packs again
            pass
        except Damaged as err:
            log.warning("writing the damaged vector files of %s again: %s", folder.name, err)
            self._set_aside(err.pack)
        except OSError as err:  # a passing failure (no file handle left, no memory to map): the files are sound
            log.warning("searching %s from its rows this time: %s", folder.name, err)
            return self._from_rows(session, revision_id, embedder)
        try:
            self._write_manifest(session, revision_id, embedder)
            return self._read(folder)
        except (OSError, Damaged) as err:  # a full disk: served from rows, as before files
            log.warning("could not keep the vector files of %s: %s", folder.name, err)
            return self._from_rows(session, revision_id, embedder)

    @staticmethod
    def _from_rows(session: Session, revision_id: str, embedder: Embedder) -> RevisionVectors:
        return RevisionVectors((Part(load_matrix(session, revision_id, embedder)),))

    def ensure(self, session: Session, revision_id: str, embedder: Embedder) -> None:
        """Write the revision's files unless they exist: its packs, each pack's full-text index
        (storage.lexical_index), and the approximate index of each pack big enough (the
        coordinator, once a revision is active: these take ~10 s per 100k chunks, which no search
        should wait for)."""
        try:
            self._ensure(session, revision_id, embedder)
        except Damaged as err:  # once more, with the damaged pack set aside: its rows go in a new one
            log.warning("writing the damaged vector files of %s again: %s", revision_id, err)
            self._set_aside(err.pack)
            self._ensure(session, revision_id, embedder)

    def _ensure(self, session: Session, revision_id: str, embedder: Embedder) -> None:
        folder = self.folder(revision_id, embedder)
        packs = self._named(folder)
        if not _whole(packs):
            try:
                self._write_manifest(session, revision_id, embedder)
            except OSError as err:
                log.warning("could not keep the vector files of %s: %s", folder.name, err)
                return
            packs = self._named(folder)
        for older in [*lexical_index.older_files(folder), *(folder / name for name in _FORMER)]:
            older.unlink(missing_ok=True)
        for pack in self._without_text_index(packs):
            try:
                keys = vector_packs.summary(pack).rows.keys()
            except vector_packs.DAMAGE as err:
                raise Damaged(pack, f"pack {pack.name}: {err!r}") from err
            self._write_beside(pack / lexical_index.FILE, lambda partial: lexical_index.write(session, keys, partial))
        for pack in self._unindexed(packs):
            vectors = np.load(pack / "vectors.npy", mmap_mode="r", allow_pickle=False)
            self._write_beside(pack / vector_index.FILE, lambda partial: vector_index.build(vectors, partial))

    def pack_folders(self, revision_id: str, embedder: Embedder) -> list[Path]:
        """The packs the revision reads, as its folder names them."""
        return self._packs_of(self.folder(revision_id, embedder))

    def _packs_of(self, folder: Path) -> list[Path]:
        return [self.packs / entry["id"] for entry in self._manifest(folder)]

    def lexical_packs(self, revision_id: str, embedder: Embedder) -> list[lexical_index.Pack] | None:
        """The full-text indexes of the revision's packs, with the versions it does not serve,
        once the coordinator has written every one (``None`` until then)."""
        try:
            entries = self._manifest(self.folder(revision_id, embedder))
        except (OSError, ValueError, KeyError):
            return None
        packs = [lexical_index.Pack(self.packs / entry["id"] / lexical_index.FILE, frozenset(entry["unserved"]))
                 for entry in entries]
        return packs if all(pack.path.is_file() for pack in packs) else None

    def _read(self, folder: Path) -> RevisionVectors:
        """The packs ``folder`` names, mapped (``Damaged`` names a pack whose files are not whole)."""
        try:
            entries = self._manifest(folder)
        except (ValueError, KeyError) as err:
            raise Damaged(None, f"{folder.name}/{MANIFEST}: {err!r}") from err
        parts = []
        for entry in entries:
            pack = self.packs / entry["id"]
            try:
                matrix = vector_packs.read(pack)
            except vector_packs.DAMAGE as err:
                raise Damaged(pack, f"pack {pack.name}: {err!r}") from err
            except FileNotFoundError as err:
                if pack.is_dir():  # the pack is there without one of its files: torn, not gone
                    raise Damaged(pack, f"pack {pack.name}: {err}") from err
                raise
            parts.append(Part(matrix, vector_packs.served_rows(matrix.versions, matrix.version_keys, set(entry["unserved"]))))
        return RevisionVectors(tuple(parts))

    def _set_aside(self, pack: Path | None) -> None:
        """Take a damaged pack out of every revision's plans and searches at once (a rename, so
        one reader among several does it); the folders naming it now name a missing pack, which
        writes their manifests again. The sweeper deletes it as an abandoned partial write, at its
        next sweep when the pack was written over an hour ago (a process that maps it keeps its
        mapping)."""
        if pack is None:
            return
        try:
            pack.rename(pack.with_name(f"{_TEMPORARY}damaged-{pack.name}"))
        except FileNotFoundError:  # another process set it aside first
            pass
        except OSError as err:  # then the plan keeps it, and the search after is served from rows
            log.warning("could not set aside the damaged pack %s: %s", pack.name, err)

    @staticmethod
    def _manifest(folder: Path) -> list[dict[str, list[str] | str]]:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["packs"]

    def _write_manifest(self, session: Session, revision_id: str, embedder: Embedder) -> None:
        """Name the revision's packs: those of its notebook's last revision still mostly served
        (vector_packs.plan), and one new pack of the rest, read from rows."""
        needed = {version_key(r, s) for r, s in session.execute(
            select(Source.chunks_revision_id, Source.chunks_source_id).where(Source.revision_id == revision_id))}
        kept, fresh = vector_packs.plan(needed, self._last_packs(session, revision_id, embedder))
        packs = {pack.id: pack for pack in kept}
        if fresh:
            # Every version goes in, those without vectors for this embedder too: the pack's
            # full-text index holds their rows, and no other pack will.
            matrix = load_matrix(session, revision_id, embedder, fresh)
            self.packs.mkdir(parents=True, exist_ok=True)
            written = vector_packs.write(self.packs, matrix, writer=revision_id)
            packs[written] = vector_packs.summary(self.packs / written)
        for pack in kept:  # named again: the sweeper must not take it for a pack no folder names
            vector_packs.touch(self.packs / pack.id)
        manifest = {"packs": [
            {"id": pack_id, "unserved": sorted(summary.rows.keys() - needed)} for pack_id, summary in packs.items()
        ]}
        folder = self.folder(revision_id, embedder)
        folder.mkdir(parents=True, exist_ok=True)
        self._write_beside(folder / MANIFEST, lambda partial: partial.write_text(json.dumps(manifest), encoding="utf-8"))

    def _last_packs(self, session: Session, revision_id: str, embedder: Embedder) -> list[vector_packs.Summary]:
        """The packs of the latest other revision of the notebook that names readable ones."""
        revision = session.get(Revision, revision_id)
        others = session.scalars(
            select(Revision.id).where(Revision.notebook_id == revision.notebook_id, Revision.id != revision_id,
                                      Revision.completed_at.is_not(None)).order_by(Revision.completed_at.desc())
        ) if revision is not None else []
        for other in others:
            try:
                return [vector_packs.summary(pack) for pack in self.pack_folders(other, embedder)]
            except (OSError, *vector_packs.DAMAGE):
                continue
        return []

    def _named(self, folder: Path) -> list[Path] | None:
        """The packs ``folder`` names; ``None`` when it has no readable manifest."""
        try:
            return self._packs_of(folder)
        except (OSError, ValueError, KeyError):
            return None

    def _unindexed(self, packs: list[Path] | None) -> list[Path]:
        """Of a revision's ``packs``, those big enough for an approximate index that have none."""
        return [pack for pack in packs or () if not (pack / vector_index.FILE).is_file()
                and vector_packs.rows(pack) >= self.index_min_chunks]

    @staticmethod
    def _without_text_index(packs: list[Path] | None) -> list[Path]:
        """Of a revision's ``packs``, those that have no full-text index (of this format)."""
        return [pack for pack in packs or () if pack.is_dir() and not (pack / lexical_index.FILE).is_file()]

    @staticmethod
    def _write_beside(path: Path, write: Callable[[Path], object]) -> None:
        """``write`` a partial file beside ``path``, then rename it into place: readers see the
        whole file or none."""
        partial = path.parent / f"{_TEMPORARY}{uuid.uuid4().hex}"
        try:
            write(partial)
            durable_replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    def wanting(self, session: Session, embedder: Embedder) -> list[str]:
        """Active revisions whose files, or the indexes they should have, are missing and not being
        written for them: after a restore (backups leave the files out), a lost
        ``ingest.write_vectors``, an index found unreadable, or a pack they name set aside as
        damaged. The sweeper sends them to the coordinator again."""
        active = session.scalars(select(Notebook.active_revision_id).where(Notebook.active_revision_id.is_not(None)))
        partial_packs = [entry.name for entry in self._fresh(self.packs)]
        wanting = []
        for revision_id in active:
            folder = self.folder(revision_id, embedder)
            packs = self._named(folder)  # the manifest read once per revision and sweep
            if any(name.startswith(vector_packs.writing(revision_id)) for name in partial_packs) or self._fresh(
                    folder) or any(self._fresh(pack) for pack in packs or ()):
                continue
            if not _whole(packs) or self._without_text_index(packs) or self._unindexed(packs):
                wanting.append(revision_id)
        return wanting

    @staticmethod
    def _fresh(folder: Path) -> list[Path]:
        """Partial writes in ``folder`` young enough to be in progress (none when it is gone)."""
        return [entry for entry in _partials(folder) if _modified(entry) >= time.time() - _WRITING_GRACE_SECONDS]

    def delete_unreferenced(self, session: Session, now: datetime | None = None) -> int:
        """Delete the files no search will read again: the folders of revisions that no longer
        exist or that another revision replaced as their notebook's active one over
        ``REPLACED_GRACE`` ago, then the packs no folder names, and abandoned partial writes."""
        if not self.root.is_dir():
            return 0
        entries = [entry for entry in self.root.iterdir() if entry.is_dir() and not entry.name.startswith(("_", _TEMPORARY))]
        revision_of = {entry: entry.name.split(".", 1)[0] for entry in entries}
        ids = set(revision_of.values())
        kept = _searchable(session, ids, (now or utcnow()) - REPLACED_GRACE) if ids else set()
        doomed = [entry for entry, revision_id in revision_of.items() if revision_id not in kept]
        for entry in doomed:
            shutil.rmtree(entry, ignore_errors=True)
        folders = [entry for entry in entries if entry not in doomed]
        named = {pack for folder in folders for pack in self._named(folder) or ()}
        deleted = len(doomed) + self._delete_unnamed_packs(named)
        return deleted + sum(_delete_abandoned(folder) for folder in (self.root, self.packs, *folders, *named))

    def _delete_unnamed_packs(self, named: set[Path]) -> int:
        """Delete the packs not ``named``, except those written too recently for the folder that
        will name them to exist yet."""
        if not self.packs.is_dir():
            return 0
        doomed = [pack for pack in self.packs.iterdir() if not pack.name.startswith(_TEMPORARY) and pack not in named
                  and _modified(pack) < time.time() - _UNNAMED_GRACE_SECONDS]
        for pack in doomed:
            shutil.rmtree(pack, ignore_errors=True)
        return len(doomed)


def _whole(packs: list[Path] | None) -> bool:
    """Whether a manifest was read (``packs``) and every pack it names is there."""
    return packs is not None and all(pack.is_dir() for pack in packs)


def _partials(folder: Path) -> list[Path]:
    """The partial writes in ``folder`` (none when it is gone)."""
    try:
        return [entry for entry in folder.iterdir() if entry.name.startswith(_TEMPORARY)]
    except FileNotFoundError:
        return []


def _modified(entry: Path) -> float:
    """When ``entry`` last changed; now when it is gone meanwhile (renamed into place, deleted),
    so that it counts as in progress and is left alone."""
    try:
        return entry.stat().st_mtime
    except FileNotFoundError:
        return time.time()


def _delete_abandoned(folder: Path) -> int:
    """Delete the partial writes in ``folder`` too old to be in progress: a crashed process's
    (a pack, a full-text index of ~1 GB at 1M chunks, a graph) or a pack set aside as damaged."""
    doomed = [entry for entry in _partials(folder) if _modified(entry) < time.time() - _WRITING_GRACE_SECONDS]
    for entry in doomed:
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
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
