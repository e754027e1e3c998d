"""Merge ranked result lists (keyword search, vector search, ...) into one ranking.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) uses only ranks, never raw
scores, because BM25 scores and cosine similarities live on unrelated scales that no fixed
normalisation makes comparable across queries. Each list adds ``weight / (k + rank)`` to every id
it contains; ``k = 60`` is the value from the paper, which damps the dominance of the first ranks.
"""
from __future__ import annotations


def reciprocal_rank_fusion(
    rankings: list[list[str]], *, k: int = 60, weights: list[float] | None = None
) -> list[tuple[str, float]]:
    """Return ``(id, fused score)`` pairs, best first; equal scores are ordered by id.

    The tie-break by id makes the result independent of dict and input ordering, so the same
    search always cites the same chunks. An id repeated within one ranking counts at its best rank.
    """
    if k <= 0:
        raise ValueError("k must be positive")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings) or any(weight < 0 for weight in weights):
        raise ValueError("weights must be non-negative, one per ranking")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item not in seen:
                seen.add(item)
                scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
