"""Recall of the approximate vector index (storage/vector_index.py) against exact search.

Usage: .venv/bin/python bench/vector_index.py [--rows 100000,1000000] [--queries 100] [--expansions 1024,2048,4096]

The vectors are distinct, as a real notebook's are: each row is the normalised sum of two real
passages' hashing-embedder vectors (SciFact and SQuAD, bench/bignotebook.py), the second weighted
0.2-0.8 at random. (bench/retrieval.py's notebooks repeat their 11,250 passages: at 1M each one
~89 times, the degenerate case for a graph, so its recall column is a floor.) Per query: the rows
the index proposes (as ``storage.retrieval`` asks for them), scored exactly; recall@50 is the share
of those best 50 scoring at least the exact 50th best. The index is built once per size with the
deployed settings, then searched at each expansion.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bignotebook import REPO, qa_pool, qa_queries

sys.path.insert(0, str(REPO))

from pipeline.embedder import HashingEmbedder  # noqa: E402
from storage import vector_index  # noqa: E402
from storage.retrieval import APPROXIMATE_CANDIDATES  # noqa: E402

PASSAGES = 11_250


def distinct_vectors(rows: int, seed: int = 7) -> np.ndarray:
    pool = qa_pool()
    base = np.stack([np.frombuffer(pool(k)[1], dtype="<f4") for k in range(PASSAGES)])
    rng = np.random.default_rng(seed)
    first, second = rng.integers(0, PASSAGES, rows), rng.integers(0, PASSAGES, rows)
    vectors = base[first] + rng.uniform(0.2, 0.8, rows).astype(np.float32)[:, None] * base[second]
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--expansions", default=f"{vector_index.EXPANSION_SEARCH // 2},{vector_index.EXPANSION_SEARCH},"
                                                f"{vector_index.EXPANSION_SEARCH * 2}")
    args = parser.parse_args()
    queries = HashingEmbedder().embed(qa_queries(args.queries))
    print(f"connectivity {vector_index.CONNECTIVITY}, {APPROXIMATE_CANDIDATES} rows proposed, {len(queries)} queries\n")
    print("| rows | build (s) | index (MB) | expansion | recall@50 | worst query | walk p50 / p95 (ms) | exact p50 / p95 (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for rows in (int(n) for n in args.rows.split(",")):
        vectors = distinct_vectors(rows)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / vector_index.FILE
            started = time.perf_counter()
            vector_index.build(vectors, path)
            build = time.perf_counter() - started
            index = vector_index.open_view(path)
            exact_times, fiftieth = [], []
            for query in queries:
                started = time.perf_counter()
                scores = vectors @ query
                fiftieth.append(-np.partition(-scores, 49)[49])
                exact_times.append(time.perf_counter() - started)
            for expansion in (int(n) for n in args.expansions.split(",")):
                index.expansion_search = expansion
                shares, walks = [], []
                for query, cut in zip(queries, fiftieth):
                    started = time.perf_counter()
                    proposed = vector_index.nearest(index, query, APPROXIMATE_CANDIDATES)
                    walks.append(time.perf_counter() - started)
                    best = np.sort(vectors[proposed] @ query)[::-1][:50]
                    shares.append(float(np.sum(best >= cut - 1e-6)) / 50)
                print(f"| {rows} | {build:.0f} | {path.stat().st_size / 2**20:.0f} | {expansion} "
                      f"| {statistics.mean(shares):.3f} | {min(shares):.2f} | {_ms(walks)} | {_ms(exact_times)} |", flush=True)


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.1f} / {np.percentile(seconds, 95) * 1000:.1f}"


if __name__ == "__main__":
    main()
