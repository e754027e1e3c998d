"""The best ``count`` of many scores without sorting them all."""
from __future__ import annotations

import numpy as np


def best(scores: np.ndarray, count: int) -> np.ndarray:
    """The indices of the ``count`` highest ``scores``, highest first, equal scores by index.

    A partition finds the cut-off score in linear time; only the scores above it are sorted, so
    equal scores (ties at the cut-off too) come out as a full stable sort would order them.
    """
    count = min(count, len(scores))
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    cut_off = -np.partition(-scores, count - 1)[count - 1]
    above = np.flatnonzero(scores > cut_off)
    chosen = np.concatenate([above, np.flatnonzero(scores == cut_off)[: count - len(above)]])
    return chosen[np.lexsort((chosen, -scores[chosen]))]
