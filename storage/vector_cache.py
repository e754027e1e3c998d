"""Revisions' vector matrices, cached per process within a budget in bytes.

Revisions are immutable, so a revision's matrix never goes stale. The cache is bounded by what the
matrices weigh, not by how many there are (eight 1M-chunk revisions would need 16 GB): the least
recently used are evicted until the total fits, and a matrix bigger than the whole budget is served
without being kept. Concurrent requests for one cold revision load it once; the others wait for it.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session
from storage.usearch_index import Index

from pipeline.embedder import Embedder
from storage.models import Chunk, ChunkVector, Source

Key = tuple[str, str]


@dataclass(frozen=True)
class VectorMatrix:
    """A revision's vectors; ``codes`` index ``resources`` so membership masks cost O(resources).
    A big revision's matrix comes with its approximate index (storage.vector_index)."""

    pks: np.ndarray
    codes: np.ndarray
    resources: list[str]
    vectors: np.ndarray
    index: Index | None = None

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
        return int(self.pks.nbytes + self.codes.nbytes + searched)


def _read_rows(fd: int, vectors: np.memmap, positions: np.ndarray) -> np.ndarray:
    width = vectors.strides[0]
    rows = np.empty((len(positions), vectors.shape[1]), dtype=vectors.dtype)
    for row, position in zip(rows, positions.tolist()):
        if os.preadv(fd, [row], vectors.offset + position * width) != width:
            raise OSError(f"{vectors.filename} ends before row {position}")
    return rows


def load_matrix(session: Session, revision_id: str, embedder: Embedder) -> VectorMatrix:
    rows = session.execute(
        select(Chunk.id, Chunk.resource_id, ChunkVector.vector)
        .join(ChunkVector, ChunkVector.chunk_pk == Chunk.id)
        .join(Source, (Source.chunks_revision_id == Chunk.revision_id) & (Source.chunks_source_id == Chunk.source_id))
        .where(Source.revision_id == revision_id, ChunkVector.embedder == embedder.name)
        .order_by(Chunk.id)  # a fixed order makes ties between equal chunks reproducible
    ).all()
    vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), embedder.dim)
    resources = sorted({r[1] for r in rows})
    position = {resource_id: code for code, resource_id in enumerate(resources)}
    return VectorMatrix(
        pks=np.array([r[0] for r in rows], dtype=np.int64),
        codes=np.array([position[r[1]] for r in rows], dtype=np.int64),
        resources=resources,
        vectors=vectors,
    )


class VectorCache:
    def __init__(self, budget_bytes: int, loader: Callable[[Session, str, Embedder], VectorMatrix] = load_matrix):
        self.budget_bytes = budget_bytes
        self._loader = loader
        self._items: OrderedDict[Key, VectorMatrix] = OrderedDict()
        self._loading: dict[Key, threading.Lock] = {}
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        with self._lock:
            return sum(matrix.nbytes for matrix in self._items.values())

    def get(self, session: Session, revision_id: str, embedder: Embedder) -> VectorMatrix:
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
            matrix = self._loader(session, revision_id, embedder)
            with self._lock:
                self._keep(key, matrix)
                self._loading.pop(key, None)
        return matrix

    def _keep(self, key: Key, matrix: VectorMatrix) -> None:
        if matrix.nbytes > self.budget_bytes:
            return
        self._items[key] = matrix
        total = sum(item.nbytes for item in self._items.values())
        while total > self.budget_bytes:
            _, evicted = self._items.popitem(last=False)
            total -= evicted.nbytes
