"""Hybrid search over one notebook revision: FTS5 bm25 and vector similarity, fused by rank.

Revisions are immutable, so a revision's vector matrix is cached per process; current
membership is applied on every query, so a removed resource's chunks vanish at once.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.embedder import Embedder
from pipeline.fts_query import build_match_query
from pipeline.fusion import reciprocal_rank_fusion
from storage import evidence, notebooks
from storage.evidence import EvidenceChunk
from storage.models import Chunk, ChunkVector, Notebook

MAX_RESULTS = 50
CANDIDATES = 100
CACHED_REVISIONS = 8
# The hashing vector is a much weaker ranker than bm25 (SciFact nDCG@10 0.47 vs 0.69). Measured by
# bench/answer_quality.py, a weight of 0.5 cost 3-14 % against bm25 alone and 0.1 still 1-5 %; at
# 0.05 with k = 20 it is neutral on the top ranks and adds recall below them (FinanceBench R@100
# 0.753 → 0.774). It breaks lexical ties and finds what the keyword index tokenises poorly
# (CJK runs, spelling variants) without outvoting bm25.
FUSION_WEIGHTS = [1.0, 0.05]
FUSION_K = 20


@dataclass(frozen=True)
class Hit:
    chunk: EvidenceChunk
    score: float


@dataclass(frozen=True)
class _Matrix:
    """A revision's vectors; ``codes`` index ``resources`` so membership masks cost O(resources)."""

    pks: np.ndarray
    codes: np.ndarray
    resources: list[str]
    vectors: np.ndarray


class _MatrixCache:
    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, str], _Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session: Session, revision_id: str, embedder: Embedder) -> _Matrix:
        key = (revision_id, embedder.name)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        matrix = self._load(session, revision_id, embedder)
        with self._lock:
            self._items[key] = matrix
            while len(self._items) > CACHED_REVISIONS:
                self._items.popitem(last=False)
        return matrix

    @staticmethod
    def _load(session: Session, revision_id: str, embedder: Embedder) -> _Matrix:
        rows = session.execute(
            select(Chunk.id, Chunk.resource_id, ChunkVector.vector)
            .join(ChunkVector, ChunkVector.chunk_pk == Chunk.id)
            .where(Chunk.revision_id == revision_id, ChunkVector.embedder == embedder.name)
            .order_by(Chunk.id)  # a fixed order makes ties between equal chunks reproducible
        ).all()
        vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), embedder.dim)
        resources = sorted({r[1] for r in rows})
        position = {resource_id: code for code, resource_id in enumerate(resources)}
        return _Matrix(
            pks=np.array([r[0] for r in rows], dtype=np.int64),
            codes=np.array([position[r[1]] for r in rows], dtype=np.int64),
            resources=resources,
            vectors=vectors,
        )


_matrices = _MatrixCache()


def _vector_ranking(
    session: Session, notebook: Notebook, revision_id: str, query: str, embedder: Embedder
) -> list[int]:
    matrix = _matrices.get(session, revision_id, embedder)
    if not len(matrix.pks):
        return []
    members = set(notebooks.member_ids(session, notebook))
    allowed = np.array([resource in members for resource in matrix.resources], dtype=bool)[matrix.codes]
    scores = matrix.vectors @ embedder.embed([query])[0]
    scores = np.where(allowed, scores, -np.inf)
    top = np.argsort(-scores, kind="stable")[:CANDIDATES]
    return [int(matrix.pks[i]) for i in top if scores[i] > 0]


def search(
    session: Session,
    notebook: Notebook,
    revision_id: str,
    query: str,
    embedder: Embedder,
    *,
    limit: int = MAX_RESULTS,
) -> list[Hit]:
    """Up to ``limit`` (≤ 50) chunks of ``revision_id``, best first."""
    limit = max(1, min(limit, MAX_RESULTS))
    match = build_match_query(query)
    lexical = (
        [pk for pk, _ in evidence.fts_candidates(session, notebook, revision_id, match, CANDIDATES)]
        if match
        else []
    )
    semantic = _vector_ranking(session, notebook, revision_id, query, embedder)
    fused = reciprocal_rank_fusion(
        [[str(pk) for pk in lexical], [str(pk) for pk in semantic]], k=FUSION_K, weights=FUSION_WEIGHTS
    )[:limit]
    chunks = evidence.chunks_by_pk(session, notebook, [int(pk) for pk, _ in fused])
    return [Hit(chunks[int(pk)], score) for pk, score in fused if int(pk) in chunks]
