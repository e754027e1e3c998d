"""The process's cache of revisions' vectors stays within its byte budget and loads each once."""
from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from pipeline.embedder import HashingEmbedder
from storage import retrieval
from storage.vector_cache import Part, RevisionVectors, VectorCache, VectorMatrix

EMBEDDER = HashingEmbedder(dim=8)


def _matrix(rows: int) -> VectorMatrix:
    return VectorMatrix(
        pks=np.arange(rows, dtype=np.int64),
        codes=np.zeros(rows, dtype=np.int64),
        resources=["r"],
        vectors=np.ones((rows, EMBEDDER.dim), dtype=np.float32),
    )


def _vectors(rows: int) -> RevisionVectors:
    return RevisionVectors((Part(_matrix(rows)),))


class Loader:
    """Revisions' vectors by revision id (``rows`` each), counting loads; a load takes ``delay`` seconds."""

    def __init__(self, rows: dict[str, int], delay: float = 0.0) -> None:
        self.rows, self.delay, self.loads = rows, delay, []

    def __call__(self, session: Any, revision_id: str, embedder: Any) -> RevisionVectors:
        self.loads.append(revision_id)
        time.sleep(self.delay)
        return _vectors(self.rows[revision_id])


def test_the_cache_never_exceeds_its_budget_and_drops_the_least_recent() -> None:
    size = _vectors(100).nbytes
    loader = Loader({"a": 100, "b": 100, "c": 100})
    cache = VectorCache(budget_bytes=2 * size, loader=loader)
    for revision in ("a", "b", "a", "c"):  # "a" was searched after "b": "b" goes
        cache.get(None, revision, EMBEDDER)  # type: ignore[arg-type]
        assert cache.cached_bytes <= cache.budget_bytes
    cache.get(None, "a", EMBEDDER)  # type: ignore[arg-type]
    cache.get(None, "c", EMBEDDER)  # type: ignore[arg-type]
    assert loader.loads == ["a", "b", "c"]
    cache.get(None, "b", EMBEDDER)  # type: ignore[arg-type]
    assert loader.loads == ["a", "b", "c", "b"]


def test_a_matrix_bigger_than_the_budget_is_served_but_not_kept() -> None:
    loader = Loader({"small": 10, "huge": 10_000})
    cache = VectorCache(budget_bytes=_vectors(100).nbytes, loader=loader)
    cache.get(None, "small", EMBEDDER)  # type: ignore[arg-type]
    assert cache.get(None, "huge", EMBEDDER).rows == 10_000  # type: ignore[arg-type]
    assert cache.cached_bytes == _matrix(10).nbytes  # the small one was not evicted for it
    cache.get(None, "huge", EMBEDDER)  # type: ignore[arg-type]
    assert loader.loads == ["small", "huge", "huge"]


def test_concurrent_cold_requests_load_a_revision_once() -> None:
    loader = Loader({"a": 100}, delay=0.2)
    cache = VectorCache(budget_bytes=1 << 30, loader=loader)
    results: list[RevisionVectors] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(None, "a", EMBEDDER)))  # type: ignore[arg-type]
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loader.loads == ["a"]
    assert len(results) == 8 and all(result is results[0] for result in results)


def test_the_vector_ranking_orders_as_a_full_stable_sort() -> None:
    """Ties (duplicate chunks) at the cut-off and above it come out lowest position first."""
    rng = np.random.default_rng(3)
    # Each row three times: the 100th best is the first of three equal rows.
    vectors = np.repeat(rng.random((60, EMBEDDER.dim), dtype=np.float32), 3, axis=0)
    matrix = VectorMatrix(np.arange(180, dtype=np.int64) + 1000, np.zeros(180, dtype=np.int64), ["r"], vectors)
    query = rng.random(EMBEDDER.dim, dtype=np.float32)
    scores = vectors @ query
    expected = [int(matrix.pks[i]) for i in np.argsort(-scores, kind="stable")[: retrieval.CANDIDATES]]
    assert retrieval.vector_ranking(RevisionVectors((Part(matrix),)), query, {"r"}) == expected


def test_parts_merge_as_one_matrix_would_rank_and_unserved_rows_never_come_back() -> None:
    """A revision served by several packs ranks as the one matrix of all its rows would: equal
    scores by chunk id, across parts too."""
    rng = np.random.default_rng(5)
    vectors = np.repeat(rng.random((100, EMBEDDER.dim), dtype=np.float32), 3, axis=0)
    pks = np.arange(300, dtype=np.int64) + 7000
    whole = VectorMatrix(pks, np.zeros(300, dtype=np.int64), ["r"], vectors)
    query = rng.random(EMBEDDER.dim, dtype=np.float32)
    halves = [VectorMatrix(pks[rows], np.zeros(len(pks[rows]), dtype=np.int64), ["r"], vectors[rows])
              for rows in (np.arange(300) % 2 == 0, np.arange(300) % 2 == 1)]
    expected = retrieval.vector_ranking(RevisionVectors((Part(whole),)), query, {"r"})
    assert retrieval.vector_ranking(RevisionVectors(tuple(Part(half) for half in halves)), query, {"r"}) == expected
    served = np.arange(150) % 5 != 0
    ranked = retrieval.vector_ranking(RevisionVectors((Part(halves[0], served), Part(halves[1]))), query, {"r"})
    unserved = halves[0].pks[~served]
    assert len(ranked) == retrieval.CANDIDATES and not set(ranked) & set(unserved.tolist())
    assert ranked == retrieval.vector_ranking(RevisionVectors((Part(whole, ~np.isin(pks, unserved)),)), query, {"r"})
