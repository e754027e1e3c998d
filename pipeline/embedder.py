"""Dense vectors for chunks and queries, behind a small pluggable interface.

The default ``HashingEmbedder`` needs no model: it hashes words and character n-grams into a fixed
number of buckets. It catches morphology, spelling variants and CJK text that the keyword index
tokenises poorly, and complements BM25 in rank fusion. ``GNOSI_EMBEDDER=minilm`` chooses a sentence
model instead (``pipeline.minilm_embedder``: better rankings, ingestion bound by its speed).

Vectors are stored next to their revision, so a vector must be a pure function of the text: hashes
are BLAKE2b (Python's ``hash()`` is salted per process), weights use only correctly rounded IEEE
operations (sqrt, multiply, add in a fixed order, ``math.fsum``), never ``log`` or BLAS dot products
whose last bits differ between CPUs and libraries. ``name`` carries a version: bump it whenever the
features change, so stored vectors of the old version are recognisably stale. Folding and word
splitting use the Unicode tables of Python and of ``regex``: a Unicode upgrade can change the vector
of text holding newly assigned characters, nothing else.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Protocol

import numpy as np
import regex

from pipeline.textnorm import STOP_WORDS, fold, words
from pipeline.types import PipelineError

# Scripts written without spaces between words: their runs are cut into character bigrams.
_UNSEGMENTED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\u30fc"
_SCRIPT_RUNS = regex.compile(f"(?P<unsegmented>[{_UNSEGMENTED}]+)|(?P<other>[^{_UNSEGMENTED}]+)")
# Sizes and weight chosen on SciFact and SQuAD (nDCG@10 at 512 dims: 0.50 and 0.68; without
# n-grams 0.42 and 0.57); adding 3-grams scored no better and embedded 30 % slower.
_NGRAM_SIZES = (4, 5)
_NGRAM_WEIGHT = 0.5
_WORD_WEIGHT = 1.0
_MAX_NGRAM_WORD = 40  # longer "words" are URLs, hashes or garbage: their n-grams only add noise


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows (all-zero for a text without features)."""

    name: str
    dim: int
    # How much its ranking counts beside bm25's (weight 1) in the hybrid search's rank fusion.
    fusion_weight: float
    # Whether closeness of its vectors means closeness of meaning (a sentence model), so the
    # extractive engine may test answers with it.
    semantic: bool

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Signed feature hashing of words and character n-grams with sqrt term-frequency weights."""

    name = "hashing-v1"
    # A much weaker ranker than bm25 (SciFact nDCG@10 0.47 vs 0.69). Measured by
    # bench/answer_quality.py, a weight of 0.5 cost 3-14 % against bm25 alone and 0.1 still 1-5 %;
    # at 0.05 (RRF k = 20) it is neutral on the top ranks and adds recall below them (FinanceBench
    # R@100 0.753 → 0.774). It breaks lexical ties and finds what the keyword index tokenises
    # poorly (CJK runs, spelling variants) without outvoting bm25.
    fusion_weight = 0.05
    semantic = False

    def __init__(self, dim: int = 512) -> None:
        if dim < 2:
            raise ValueError("dim must be at least 2")
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row] = self._vector(text)
        return vectors

    def _vector(self, text: str) -> np.ndarray:
        occurrences = Counter(words(fold(text)))
        features = [_word_features(word) for word in occurrences]
        hashes, values = [], []
        for kind, weight in ((0, _WORD_WEIGHT), (1, _NGRAM_WEIGHT)):
            kind_hashes, tf = _feature_counts(list(map(itemgetter(kind), features)), list(occurrences.values()))
            hashes.append(kind_hashes)
            values.append(weight * np.sqrt(tf))
        all_hashes = np.concatenate(hashes)
        if not len(all_hashes):
            return np.zeros(self.dim)
        signs = np.where(all_hashes >> np.uint64(63), -1.0, 1.0)  # the top bit, independent of the bucket
        slots = (all_hashes % np.uint64(self.dim)).astype(np.intp)
        buckets = np.bincount(slots, weights=signs * np.concatenate(values), minlength=self.dim)
        norm = math.sqrt(math.fsum((buckets * buckets).tolist()))
        return buckets / norm if norm > 0 else buckets


def _feature_counts(per_word: list[np.ndarray], word_tf: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct feature hashes (sorted, so the summation order is fixed) and their term frequency."""
    lengths = list(map(len, per_word))
    if not sum(lengths):
        return np.zeros(0, dtype=np.uint64), np.zeros(0)
    unique, inverse = np.unique(np.concatenate(per_word), return_inverse=True)
    tf = np.bincount(inverse, weights=np.repeat(np.asarray(word_tf, dtype=np.float64), lengths))
    return unique, tf


@lru_cache(maxsize=1 << 16)
def _word_features(word: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of one folded word's features (word-like, n-gram), cached: words repeat so much
    (Zipf) that hashing per word instead of per occurrence makes embedding several times faster.
    They are kept as arrays so a text's features join in one ``np.concatenate``."""
    whole: list[int] = []
    grams: list[int] = []
    for run in _SCRIPT_RUNS.finditer(word):
        if run.lastgroup == "unsegmented":
            whole.extend(_hash64(f"w\x1f{feature}") for feature in _bigram_features(run.group()))
        elif run.group() not in STOP_WORDS:
            whole.append(_hash64(f"w\x1f{run.group()}"))
            grams.extend(_hash64(f"g\x1f{gram}") for gram in _ngram_features(run.group()))
    arrays = np.array(whole, dtype=np.uint64), np.array(grams, dtype=np.uint64)
    for array in arrays:
        array.setflags(write=False)  # shared by every later text through the cache
    return arrays


def _bigram_features(run: str) -> Iterator[str]:
    """Characters and character bigrams: a cheap stand-in for word segmentation in CJK or Thai."""
    yield from run
    yield from (run[i:i + 2] for i in range(len(run) - 1))


def _ngram_features(word: str) -> Iterator[str]:
    """Character n-grams of ``<word>``, so inflections and compounds share most features."""
    if word.isdigit() or len(word) > _MAX_NGRAM_WORD:
        return
    padded = f"<{word}>"
    for size in _NGRAM_SIZES:
        yield from (padded[i:i + size] for i in range(len(padded) - size + 1))


def _hash64(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def cosine_similarity(embedder: Embedder) -> Callable[[str, Sequence[str]], list[float]]:
    """How close each of ``texts`` is to ``text`` (vectors are unit rows: a dot product)."""

    def similarity(text: str, texts: Sequence[str]) -> list[float]:
        vectors = embedder.embed([text, *texts])
        return (vectors[1:] @ vectors[0]).tolist()

    return similarity


def to_bytes(vector: np.ndarray) -> bytes:
    """Serialise one vector as little-endian float32, the storage format of every embedder."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(blob: bytes, dim: int) -> np.ndarray:
    """Read a vector written by ``to_bytes``; a blob of the wrong size means corrupt storage."""
    if len(blob) != 4 * dim:
        raise PipelineError("VECTOR_BLOB_INVALID", f"expected {4 * dim} bytes for dim {dim}, got {len(blob)}")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def _minilm() -> Embedder:
    """Imported on demand: onnxruntime loads only where the setting asks for the model."""
    from pipeline.minilm_embedder import MiniLMEmbedder

    return MiniLMEmbedder()


_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "hashing": HashingEmbedder,
    HashingEmbedder.name: HashingEmbedder,
    "minilm": _minilm,
    "minilm-l6-v2-int8": _minilm,
}


def embedder_from_name(name: str) -> Embedder:
    """Build the embedder registered as ``name`` (``"hashing"`` is the default)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise PipelineError("EMBEDDER_UNKNOWN", f"unknown embedder {name[:80]!r}; known: {known}")
    return factory()
