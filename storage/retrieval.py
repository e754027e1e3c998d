"""Hybrid search over one notebook revision: FTS5 bm25 and vector similarity, fused by rank.

The bm25 half ranks in the full-text indexes of the revision's packs once the coordinator has
written them (storage.lexical_index, storage.vector_packs), else in the main table.

Revisions are immutable, so a revision's vectors are cached per process (storage.vector_cache);
current membership is applied on every query, so a removed resource's chunks vanish at once.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sqlalchemy.orm import Session

from pipeline.embedder import Embedder
from pipeline.fts_query import as_match, match_terms
from pipeline.fusion import reciprocal_rank_fusion
from storage import evidence, lexical_index, notebooks, top_k, vector_index
from storage.evidence import EvidenceChunk
from storage.models import Notebook
from storage.vector_cache import Part, RevisionVectors, VectorCache, VectorMatrix

MAX_RESULTS = 50
CANDIDATES = 100
# Rows an approximate index proposes for the CANDIDATES: room for rows of removed resources.
APPROXIMATE_CANDIDATES = 4 * CANDIDATES
# bm25's weight in the fusion; the vector list weighs its embedder's ``fusion_weight``.
BM25_WEIGHT = 1.0
FUSION_K = 20

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hit:
    chunk: EvidenceChunk
    score: float


def vector_ranking(vectors: RevisionVectors, query_vector: np.ndarray, members: set[str]) -> list[int]:
    """The ``CANDIDATES`` best chunks of current ``members`` by similarity, best first, equal
    scores by chunk id: each part's best, merged."""
    found = [_part_ranking(part, query_vector, members) for part in vectors.parts]
    pks = np.concatenate([pks for pks, _ in found]) if found else np.empty(0, dtype=np.int64)
    scores = np.concatenate([scores for _, scores in found]) if found else np.empty(0, dtype=np.float32)
    return [int(pk) for pk in pks[np.lexsort((pks, -scores))[:CANDIDATES]]]


def _part_ranking(part: Part, query_vector: np.ndarray, members: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """The pks and scores of the ``CANDIDATES`` best rows the part serves of current ``members``.

    A matrix with an approximate index scores only the rows the index proposes, exactly; when
    removed resources (or rows the revision does not serve) took so many of them that fewer than
    ``CANDIDATES`` are left, and exact search could find more, every row is scored instead.
    """
    matrix = part.matrix
    if not len(matrix.pks):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    member = np.array([resource in members for resource in matrix.resources], dtype=bool)

    def allowed(rows: np.ndarray | slice) -> np.ndarray:
        mask = member[matrix.codes[rows]]
        return mask if part.served is None else mask & part.served[rows]

    if matrix.index is not None:
        proposed = vector_index.nearest(matrix.index, query_vector, APPROXIMATE_CANDIDATES)
        rows = proposed[allowed(proposed)]
        if len(rows) == len(proposed) or len(rows) >= CANDIDATES:
            return _best(matrix, rows, matrix.rows(rows) @ query_vector)
    rows = np.arange(len(matrix.pks))
    return _best(matrix, rows, np.where(allowed(slice(None)), matrix.vectors @ query_vector, -np.inf))


def _best(matrix: VectorMatrix, rows: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pks and scores of the ``CANDIDATES`` best-scoring ``rows`` (ascending positions) that
    score above 0."""
    best = top_k.best(scores, CANDIDATES)
    best = best[scores[best] > 0]
    return matrix.pks[rows[best]], scores[best]


# Where the full-text indexes of a revision's packs are, once written (storage.vector_files.lexical_packs).
LexicalFiles = Callable[[str, Embedder], list[lexical_index.Pack] | None]


class Retriever:
    """Hybrid search with one embedder and one process-wide cache of revisions' vectors."""

    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorCache,
        observe: Callable[[float], None] = lambda seconds: None,
        lexical_files: LexicalFiles = lambda revision_id, embedder: None,
        between_phases: Callable[[], None] = lambda: None,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.observe = observe  # told each search's own seconds (the web app's latency histogram)
        self.lexical_files = lexical_files
        # Called after the words' list and after the vectors' list. The web app lets the requests
        # waiting for the CPU start there (app.cooperative): on one event loop a search is then
        # three stretches, and a turn asked meanwhile waits for one of them, not for whole searches.
        self.between_phases = between_phases

    def search(
        self, session: Session, notebook: Notebook, revision_id: str, query: str, *, limit: int = MAX_RESULTS
    ) -> list[Hit]:
        """Up to ``limit`` (≤ 50) chunks of ``revision_id``, best first."""
        started = time.perf_counter()
        limit = max(1, min(limit, MAX_RESULTS))
        members = set(notebooks.member_ids(session, notebook))
        terms = match_terms(query)
        lexical = [pk for pk, _ in self.lexical_candidates(session, notebook, revision_id, terms, members)] if terms else []
        paused = self._pause()
        vectors = self.vectors.get(session, revision_id, self.embedder)
        semantic = vector_ranking(vectors, self.embedder.embed([query])[0], members)
        paused += self._pause()
        fused = reciprocal_rank_fusion(
            [[str(pk) for pk in lexical], [str(pk) for pk in semantic]], k=FUSION_K, weights=[BM25_WEIGHT, self.embedder.fusion_weight]
        )[:limit]
        chunks = evidence.chunks_by_pk(session, notebook, revision_id, [int(pk) for pk, _ in fused])
        hits = [Hit(chunks[int(pk)], score) for pk, score in fused if int(pk) in chunks]
        self.observe(time.perf_counter() - started - paused)
        return hits

    def _pause(self) -> float:
        """The seconds given to other requests, which are not the search's own."""
        started = time.perf_counter()
        self.between_phases()
        return time.perf_counter() - started

    def lexical_candidates(
        self, session: Session, notebook: Notebook, revision_id: str, terms: list[str], members: set[str]
    ) -> list[evidence.Candidate]:
        """The revision's best ``CANDIDATES`` for the OR of ``terms`` (pipeline.fts_query): from its
        packs' indexes when they have them (statistics of its rows only), else from the main table,
        which also answers when a file fails. A damaged file is removed, so that the sweeper has the
        coordinator write it again."""
        packs = self.lexical_files(revision_id, self.embedder)
        if packs is not None:
            try:
                return lexical_index.candidates(packs, terms, CANDIDATES, members.__contains__)
            except sqlite3.DatabaseError as err:
                log.warning("searching revision %s in the main index: its own failed: %s", revision_id, err)
                if isinstance(err, lexical_index.Unreadable):
                    err.path.unlink(missing_ok=True)
        return evidence.fts_candidates(session, notebook, revision_id, as_match(terms), CANDIDATES)
