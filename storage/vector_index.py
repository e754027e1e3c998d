"""An approximate nearest-neighbour index (HNSW, usearch) over a big revision's vectors.

Exact search multiplies every vector of the revision for every query: at 1M chunks that reads the
whole 2 GB float32 matrix (55 / 152 ms p50 / p95) and keeps its pages resident (1,972 MB of RSS
after the first search). Above ``GNOSI_VECTOR_INDEX_MIN_CHUNKS`` the coordinator also writes an
HNSW graph of the vectors quantised to int8 next to the revision's vector files
(storage.vector_files); a search walks it for ``APPROXIMATE_CANDIDATES`` rows, then scores those
exactly from the float32 rows, so only their pages and the walked part of the graph are touched.
Keys are row positions in the revision's matrix. bench/retrieval.py reports recall@50 against
exact search.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from storage.usearch_index import Index

FILE = "hnsw.usearch"
# Measured by bench/vector_index.py on 1M distinct vectors (sums of two real passages' vectors),
# recall@50 after exact rescoring of 400 proposed rows: connectivity 16 → 0.85 at expansion 1024
# (build 175 s); connectivity 32 → 0.95 at 1024, 0.97 at 2048 (8.7 / 13.4 ms p50 / p95 per
# walk), 0.98 at 4096 (14.5 / 16.6 ms); build 219 s. Exact search of 1M rows: 57 / 65 ms.
CONNECTIVITY = 32
EXPANSION_ADD = 128
EXPANSION_SEARCH = 2048
# Rows inserted by one thread before the others join: threads inserting into a young graph at once
# left rows no search reaches (in 3 of 10 builds of 133 rows, 1 to 12 of them; none built alone).
SEEDED_ALONE = 10_000


def build(vectors: np.ndarray, path: Path) -> None:
    """Write the index of ``vectors`` (row ``i`` under key ``i``) to ``path``."""
    index = Index(
        ndim=vectors.shape[1], metric="ip", dtype="i8", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD
    )
    keys, rows = np.arange(len(vectors), dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32)
    index.add(keys[:SEEDED_ALONE], rows[:SEEDED_ALONE], threads=1)
    if len(rows) > SEEDED_ALONE:
        index.add(keys[SEEDED_ALONE:], rows[SEEDED_ALONE:])  # every core
    index.save(str(path))


def open_view(path: Path) -> Index:
    """The index at ``path``, memory-mapped rather than read."""
    index = Index.restore(str(path), view=True)
    if index is None:
        raise ValueError(f"not a vector index: {path.name}")
    index.expansion_search = EXPANSION_SEARCH
    return index


def nearest(index: Index, query: np.ndarray, count: int) -> np.ndarray:
    """Row positions of about the ``count`` rows nearest to ``query``, ascending (not by score)."""
    return np.unique(np.asarray(index.search(query, count).keys, dtype=np.int64))
