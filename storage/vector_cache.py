"""Revisions' vectors, cached per process within a budget in bytes.

A revision's vectors are one or more matrices (storage.vector_packs: a refresh shares the packs of
the source versions it did not change), each with the rows the revision serves. Revisions are
immutable, so a revision's vectors never go stale. The cache is bounded by what the vectors weigh,
not by how many there are (eight 1M-chunk revisions would need 16 GB): the least recently used are
evicted until the total fits, and a revision bigger than the whole budget is served without being
kept. Concurrent requests for one cold revision load it once; the others wait for it.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session
from storage.usearch_index import Index

from pipeline.embedder import Embedder
from storage.models import Chunk, ChunkVector, Source

Key = tuple[str, str]
# Source versions asked for by one statement: two bound values each, well under SQLite's limit.
_VERSIONS_PER_QUERY = 500


@dataclass(frozen=True)
class VectorMatrix:
    """Vectors of chunks in chunk-id order; ``codes`` index ``resources`` so membership masks cost
    O(resources), and ``versions`` index ``version_keys``, the source versions (``version_key``)
    the rows belong to. A big matrix comes with its approximate index (storage.vector_index)."""

    pks: np.ndarray
    codes: np.ndarray
    resources: list[str]
    vectors: np.ndarray
    index: Index | None = None
    versions: np.ndarray | None = None
    version_keys: tuple[str, ...] = ()

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The float32 rows at ``positions`` (ascending), as an array of their own.

        A matrix mapped from its file is read with ``pread``, not through the mapping: the page
        cache holds such files in large folios, and a fault maps a whole folio into the process, so
        400 proposed rows read through the mapping of a 1M-row file made 620 MB of it resident
        (bench/retrieval.py's RSS column); read, they cost their 800 KB.
        """
        if isinstance(self.vectors, np.memmap) and self.vectors.filename is not None:
            try:
                with open(self.vectors.filename, "rb", buffering=0) as file:
                    return _read_rows(file.fileno(), self.vectors, positions)
            except FileNotFoundError:  # the folder was deleted since: the mapping still holds the file
                pass
        return np.asarray(self.vectors[positions])

    @property
    def nbytes(self) -> int:
        """What searches may touch: every vector for exact search; with an index, the graph and
        its int8 vectors, and only the rows it proposes of the float32 matrix (not counted)."""
        searched = self.vectors.nbytes if self.index is None else self.index.serialized_length
        versions = 0 if self.versions is None else self.versions.nbytes
        return int(self.pks.nbytes + self.codes.nbytes + versions + searched)


@dataclass(frozen=True)
class Part:
    """A matrix and which of its rows a revision serves (``None``: all of them)."""

    matrix: VectorMatrix
    served: np.ndarray | None = None


@dataclass(frozen=True)
class RevisionVectors:
    """Every vector a revision serves, in one or more parts."""

    parts: tuple[Part, ...]

    @property
    def nbytes(self) -> int:
        return sum(part.matrix.nbytes + (0 if part.served is None else part.served.nbytes) for part in self.parts)

    @property
    def rows(self) -> int:
        return sum(len(p.matrix.pks) if p.served is None else int(p.served.sum()) for p in self.parts)


def _read_rows(fd: int, vectors: np.memmap, positions: np.ndarray) -> np.ndarray:
    width = vectors.strides[0]
    rows = np.empty((len(positions), vectors.shape[1]), dtype=vectors.dtype)
    for row, position in zip(rows, positions.tolist()):
        if os.preadv(fd, [row], vectors.offset + position * width) != width:
            raise OSError(f"{vectors.filename} ends before row {position}")
    return rows


def version_key(revision_id: str, source_id: str) -> str:
    """A source version's name: the revision and source whose chunks it is (docs/decisions/0011)."""
    return f"{revision_id}/{source_id}"


def load_matrix(
    session: Session, revision_id: str, embedder: Embedder, versions: Collection[str] | None = None
) -> VectorMatrix:
    """The vectors ``revision_id`` serves, read from their rows: all of them, or those of the
    source ``versions`` given, which are then all among its ``version_keys``, with rows or not."""
    query = (
        select(Chunk.id, Chunk.resource_id, ChunkVector.vector, Chunk.revision_id, Chunk.source_id)
        .join(ChunkVector, ChunkVector.chunk_pk == Chunk.id)
        .join(Source, (Source.chunks_revision_id == Chunk.revision_id) & (Source.chunks_source_id == Chunk.source_id))
        .where(Source.revision_id == revision_id, ChunkVector.embedder == embedder.name)
    )
    if versions is None:
        rows = list(session.execute(query))
    else:
        pairs = [tuple(key.split("/", 1)) for key in sorted(versions)]
        rows = [row for start in range(0, len(pairs), _VERSIONS_PER_QUERY) for row in session.execute(
            query.where(tuple_(Chunk.revision_id, Chunk.source_id).in_(pairs[start:start + _VERSIONS_PER_QUERY])))]
    rows.sort(key=lambda row: row[0])  # chunk-id order makes ties between equal chunks reproducible
    vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), embedder.dim)
    resources = sorted({r[1] for r in rows})
    keys = sorted({version_key(r[3], r[4]) for r in rows} if versions is None else versions)
    position = {resource_id: code for code, resource_id in enumerate(resources)}
    version = {key: code for code, key in enumerate(keys)}
    return VectorMatrix(
        pks=np.array([r[0] for r in rows], dtype=np.int64),
        codes=np.array([position[r[1]] for r in rows], dtype=np.int64),
        resources=resources,
        vectors=vectors,
        versions=np.array([version[version_key(r[3], r[4])] for r in rows], dtype=np.int32),
        version_keys=tuple(keys),
    )


def load_revision(session: Session, revision_id: str, embedder: Embedder) -> RevisionVectors:
    """The revision's vectors read from its rows, as one part."""
    return RevisionVectors((Part(load_matrix(session, revision_id, embedder)),))


class VectorCache:
    def __init__(self, budget_bytes: int, loader: Callable[[Session, str, Embedder], RevisionVectors] = load_revision):
        self.budget_bytes = budget_bytes
        self._loader = loader
        self._items: OrderedDict[Key, RevisionVectors] = OrderedDict()
        self._loading: dict[Key, threading.Lock] = {}
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        with self._lock:
            return sum(vectors.nbytes for vectors in self._items.values())

    def get(self, session: Session, revision_id: str, embedder: Embedder) -> RevisionVectors:
        key = (revision_id, embedder.name)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one loader per key; the others find its result when they get the lock
            with self._lock:
                if key in self._items:
                    return self._items[key]
            vectors = self._loader(session, revision_id, embedder)
            with self._lock:
                self._keep(key, vectors)
                self._loading.pop(key, None)
        return vectors

    def _keep(self, key: Key, vectors: RevisionVectors) -> None:
        if vectors.nbytes > self.budget_bytes:
            return
        self._items[key] = vectors
        total = sum(item.nbytes for item in self._items.values())
        while total > self.budget_bytes:
            _, evicted = self._items.popitem(last=False)
            total -= evicted.nbytes
