"""Tests of the hashing embedder: bit-identical across processes, meaningful, and storable."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.embedder import HashingEmbedder, embedder_from_name, from_bytes, to_bytes
from pipeline.types import PipelineError
from support.jsonl import read_jsonl

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Trace-based just-in-time compilation of JavaScript loops.",
    "Café au lait, naïve résumé: ﬁne typography.",
    "化学方程式是用化学式来描述化学反应的式子。",
    "",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_vectors_are_bit_identical_in_fresh_processes_with_different_hash_seeds() -> None:
    script = (
        "import sys, json; from pipeline.embedder import HashingEmbedder, to_bytes; "
        "texts = json.loads(sys.stdin.read()); "
        "sys.stdout.write(b''.join(to_bytes(v) for v in HashingEmbedder().embed(texts)).hex())"
    )
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        result = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(TEXTS),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outputs.append(result.stdout)
    here = b"".join(to_bytes(v) for v in HashingEmbedder().embed(TEXTS)).hex()
    assert outputs[0] == outputs[1] == here


def test_stored_vectors_stay_valid_until_the_name_changes() -> None:
    """Revisions keep their vectors: an optimisation that changed a single bit of ``hashing-v1``
    would silently mix two vector spaces, so a feature change must bump the name (and this digest)."""
    digest = hashlib.sha256(b"".join(to_bytes(v) for v in HashingEmbedder().embed(TEXTS))).hexdigest()
    assert HashingEmbedder.name == "hashing-v1"
    assert digest == "06275e0b52188ddccb261c9e82f859bcd49fc4a186eb893b58d27e1acfbb315e"


def test_shape_dtype_and_unit_norm() -> None:
    vectors = HashingEmbedder(dim=256).embed(TEXTS)

    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-6)
    assert HashingEmbedder().embed([]).shape == (0, 512)


@pytest.mark.parametrize("text", ["", "   ", "?!…", "the of and"])
def test_text_without_features_gives_a_zero_vector_without_nan(text: str) -> None:
    [vector] = HashingEmbedder().embed([text])

    assert not np.isnan(vector).any() and not vector.any()


def test_case_accents_and_ligatures_do_not_matter() -> None:
    plain, fancy = HashingEmbedder().embed(["cafe naive resume fine", "CAFÉ Naïve Résumé ﬁne"])

    assert np.array_equal(plain, fancy)


def test_similar_texts_score_higher_than_unrelated_ones() -> None:
    query, close, unrelated = HashingEmbedder().embed(
        [
            "How does the compiler record loop traces?",
            "The dynamic compiler records traces of hot loops and compiles them to native code.",
            "Quarterly revenue grew five percent thanks to strong beauty product sales.",
        ]
    )
    assert cosine(query, close) > cosine(query, unrelated) + 0.1
    zh_query, zh_close, zh_unrelated = HashingEmbedder().embed(
        ["化学反应方程式", "化学方程式又称化学反应式，用化学式描述化学反应。", "今天的天气很好，我们去公园散步。"]
    )
    assert cosine(zh_query, zh_close) > cosine(zh_query, zh_unrelated) + 0.1


def test_retrieves_scifact_abstracts_far_better_than_chance(corpus_dir: Path) -> None:
    """Claims against 1,000 abstracts that include their gold ones: the vectors must carry meaning.

    The whole SciFact set scores nDCG@10 ≈ 0.50 at 512 dimensions (BM25: 0.68); the floor below is
    deliberately loose, it catches a broken feature pipeline, not a small regression.
    """
    scifact = corpus_dir / "qa" / "scifact"
    qrels: dict[str, set[str]] = {}
    for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:101]:
        query_id, doc_id, _ = line.split("\t")
        qrels.setdefault(query_id, set()).add(doc_id)
    gold = set().union(*qrels.values())
    documents = read_jsonl(scifact / "corpus.jsonl")
    documents = [d for d in documents if d["_id"] in gold] + [d for d in documents if d["_id"] not in gold]
    documents = documents[:1000]
    queries = {q["_id"]: q["text"] for q in read_jsonl(scifact / "queries.jsonl") if q["_id"] in qrels}
    embedder = HashingEmbedder()

    started = time.perf_counter()
    doc_vectors = embedder.embed([f"{d['title']} {d['text']}" for d in documents])
    elapsed = time.perf_counter() - started
    print(f"\nhashing-v1: {len(documents) / elapsed:.0f} abstracts/s")

    query_ids = list(qrels)
    scores = embedder.embed([queries[q] for q in query_ids]) @ doc_vectors.T
    hits = 0
    for row, query_id in enumerate(query_ids):
        top = {documents[i]["_id"] for i in np.argsort(-scores[row], kind="stable")[:10]}
        hits += bool(top & qrels[query_id])
    print(f"hit rate@10 on {len(query_ids)} claims: {hits / len(query_ids):.2f}")
    assert hits / len(query_ids) >= 0.5


def test_throughput_on_a_few_thousand_chunks(corpus_dir: Path) -> None:
    paragraphs = [document["text"] for document in read_jsonl(corpus_dir / "qa" / "squad_v1.1_dev" / "corpus.jsonl")]
    started = time.perf_counter()
    vectors = HashingEmbedder().embed(paragraphs)
    elapsed = time.perf_counter() - started
    print(f"\nhashing-v1: {len(paragraphs)} chunks in {elapsed:.2f} s ({len(paragraphs) / elapsed:.0f}/s)")
    assert vectors.shape == (len(paragraphs), 512)


def test_bytes_round_trip_is_little_endian_float32() -> None:
    [vector] = HashingEmbedder(dim=8).embed(["little endian"])
    blob = to_bytes(vector)

    assert len(blob) == 32 and blob == vector.astype("<f4").tobytes()
    assert np.array_equal(from_bytes(blob, 8), vector)
    with pytest.raises(PipelineError) as error:
        from_bytes(blob[:-1], 8)
    assert error.value.code == "VECTOR_BLOB_INVALID"


def test_embedders_are_built_by_name() -> None:
    embedder = embedder_from_name("hashing")

    assert isinstance(embedder, HashingEmbedder) and (embedder.name, embedder.dim) == ("hashing-v1", 512)
    assert isinstance(embedder_from_name(embedder.name), HashingEmbedder)
    with pytest.raises(PipelineError) as error:
        embedder_from_name("sentence-transformers/unknown")
    assert error.value.code == "EMBEDDER_UNKNOWN"
