"""Search latency and memory by notebook size; a small notebook inside a big instance; cold start.

Usage: .venv/bin/python bench/retrieval.py [--sizes 10000,100000,1000000] [--queries 100] [--small 10000]

Each notebook is built straight in storage on the real schema (bench/bignotebook.py: SciFact and
SQuAD passages, hashing-embedder vectors, the FTS5 trigger indexing every row); queries are
SciFact claims and SQuAD questions. Per query the variants run back to back (interleaved, so a
slow spell hits all of them), warm: the deployed hybrid search (``Retriever.search``), and as
anchors its two halves alone, the FTS5 candidates restricted to the revision inside the index
(alembic 0009) and the vector ranking, plus the FTS5 query before this change (match every
notebook's rows, join each to its chunk, then sort). "cold" runs in a fresh process: the first search's
time and how much the process's resident memory grew with it, with the revision's vectors read from
their rows, and mapped from the files the coordinator writes after activation (storage.vector_files;
the time to write them is shown too).

The second table compares the approximate index (storage/vector_index.py), built on every size
here whatever the deployed threshold, with exact search on the same notebooks: warm latency of
the vector ranking and of hybrid search, recall@50 of the vector ranking, how many hybrid top-10s
are the same, and the cold first search with files and index mapped.

The third table compares a revision's own full-text index (storage/lexical_index.py, written by
the coordinator after activation) with the main table it replaces for searches: the time to write
it, its size, both lexical halves and hybrid search with either, interleaved, and whether hybrid
top-10s stay the same (they should: a notebook alone has the same statistics in both).

The small-notebook rows put a ``--small``-chunk notebook into the biggest instance and compare it
with the same notebook alone in an instance of its own: latency ratio and top-10 agreement, with
the main table and with each notebook's own full-text index. The two places are searched in turn
for each question, after a round over every question that warms both (timed one place after the
other, the place searched second, inside a 6 GB database, read 1.4× slower than alone where
interleaved it reads 1.01×).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from bignotebook import REPO, qa_pool, qa_queries, fill, new_notebook
from pipeline.embedder import HashingEmbedder
from pipeline.fts_query import build_match_query, match_terms
from storage import evidence, lexical_index, notebooks, revisions
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Notebook
from storage.retrieval import CANDIDATES, LexicalFiles, Retriever, vector_ranking
from storage.vector_cache import RevisionVectors, VectorCache, load_revision
from storage.vector_files import VectorFiles

UNBOUNDED = 1 << 62
# Where a Retriever's cache gets a revision's matrix: its rows, or its files (with the index, if any).
Loader = Callable[[Session, str, HashingEmbedder], RevisionVectors]
NO_LEXICAL_FILES: LexicalFiles = lambda revision_id, embedder: None  # noqa: E731 - the main table only


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build(database: Path, chunks: int, first_passage: int = 0) -> tuple[str, float]:
    """Add a notebook of ``chunks`` chunks to ``database``; its id and the seconds storing took."""
    upgrade(database)
    db = Database(database)
    pool = qa_pool()
    sources = max(1, min(1000, chunks // 100))
    with db.session() as session:
        notebook, revision = new_notebook(session, f"n{chunks}-{first_passage}", sources)
        seconds = fill(session, revision, chunks, sources, lambda k: pool(first_passage + k))
        revisions.activate(session, notebook, revision)
        notebook_id = notebook.id
    db.dispose()
    return notebook_id, seconds


# The lexical query before this change: match every notebook's rows, join each of them to its
# chunk and membership, then sort (bm25 took column weights for (context, text) only).
BEFORE_SQL = text(
    """
    SELECT c.id, bm25(chunks_fts, 0.0, :context_weight, :text_weight) AS score
    FROM chunks_fts
    JOIN chunks c ON c.id = chunks_fts.rowid
    JOIN notebook_resources m
      ON m.notebook_id = c.notebook_id AND m.resource_id = c.resource_id
     AND m.vault_hash = c.vault_hash AND m.workspace_id = c.workspace_id
    WHERE chunks_fts MATCH :match
      AND c.revision_id = :revision_id
      AND c.notebook_id = :notebook_id
      AND c.vault_hash = :vault_hash AND c.workspace_id = :workspace_id
    ORDER BY score
    LIMIT :limit
    """
)


def _fts_before(session: Session, notebook: Notebook, match: str) -> list[int]:
    rows = session.execute(BEFORE_SQL, {
        "context_weight": evidence.COLUMN_WEIGHTS[0], "text_weight": evidence.COLUMN_WEIGHTS[1],
        "match": f"{{context text}} : ({match})", "revision_id": notebook.active_revision_id,
        "notebook_id": notebook.id, "vault_hash": notebook.vault_hash, "workspace_id": notebook.workspace_id,
        "limit": CANDIDATES,
    }).all()
    return [row[0] for row in rows]


def variants(retriever: Retriever) -> dict[str, Callable[[Session, Notebook, str], object]]:
    embedder = retriever.embedder

    main_table_only = Retriever(embedder, retriever.vectors)

    def hybrid(session: Session, notebook: Notebook, query: str) -> object:
        return retriever.search(session, notebook, notebook.active_revision_id or "", query)

    def hybrid_main_table(session: Session, notebook: Notebook, query: str) -> object:
        return main_table_only.search(session, notebook, notebook.active_revision_id or "", query)

    def fts(session: Session, notebook: Notebook, query: str) -> object:
        match = build_match_query(query)
        return evidence.fts_candidates(session, notebook, notebook.active_revision_id or "", match, CANDIDATES) if match else []

    def fts_before(session: Session, notebook: Notebook, query: str) -> object:
        match = build_match_query(query)
        return _fts_before(session, notebook, match) if match else []

    def own_index(session: Session, notebook: Notebook, query: str) -> object:
        terms = match_terms(query)
        members = set(notebooks.member_ids(session, notebook))
        return retriever.lexical_candidates(session, notebook, notebook.active_revision_id or "", terms, members) if terms else []

    def vectors(session: Session, notebook: Notebook, query: str) -> object:
        served = retriever.vectors.get(session, notebook.active_revision_id or "", embedder)
        return vector_ranking(served, embedder.embed([query])[0], set(notebooks.member_ids(session, notebook)))

    return {"hybrid": hybrid, "hybrid, main table": hybrid_main_table, "FTS5 in revision": fts,
            "FTS5 before": fts_before, "vectors": vectors, "FTS5 own index": own_index}


def timings(
    database: Path, notebook_id: str, queries: list[str], names: list[str], loader: Loader = load_revision,
    lexical_files: LexicalFiles = NO_LEXICAL_FILES,
) -> dict[str, list[float]]:
    return places_timings({"": (database, notebook_id, lexical_files)}, queries, names, loader)[""]


# Where a notebook is searched: its database, its id, and where its own full-text index is.
Place = tuple[Path, str, LexicalFiles]


def places_timings(
    places: dict[str, Place], queries: list[str], names: list[str], loader: Loader = load_revision
) -> dict[str, dict[str, list[float]]]:
    """Each place's seconds per variant and query, warm: every variant and place is run once over
    every query first, then per query each place runs each variant in turn (interleaved, so a slow
    spell hits them all alike)."""
    runs = {}
    for where, (database, notebook_id, lexical_files) in places.items():
        db = Database(database)
        retriever = Retriever(HashingEmbedder(), VectorCache(UNBOUNDED, loader=loader), lexical_files=lexical_files)
        variant = variants(retriever)
        runs[where] = (db, notebook_id, {name: variant[name] for name in names})  # in the table's order
    seconds: dict[str, dict[str, list[float]]] = {where: {name: [] for name in names} for where in places}
    for measured in (False, True):
        for query in queries:
            for where, (db, notebook_id, chosen) in runs.items():
                with db.reader() as session:
                    notebook = session.get(Notebook, notebook_id)
                    assert notebook is not None
                    for name, run in chosen.items():
                        started = time.perf_counter()
                        run(session, notebook, query)
                        if measured:
                            seconds[where][name].append(time.perf_counter() - started)
    for db, _, _ in runs.values():
        db.dispose()
    return seconds


def top10(
    database: Path, notebook_id: str, queries: list[str], loader: Loader = load_revision,
    lexical_files: LexicalFiles = NO_LEXICAL_FILES,
) -> list[list[str]]:
    db = Database(database)
    retriever = Retriever(HashingEmbedder(), VectorCache(UNBOUNDED, loader=loader), lexical_files=lexical_files)
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None
        ranked = [[hit.chunk.chunk_id for hit in retriever.search(session, notebook, notebook.active_revision_id or "",
                                                                    query, limit=10)] for query in queries]
    db.dispose()
    return ranked


def cold(database: Path, notebook_id: str, query: str, vector_files: Path | None = None) -> dict[str, float]:
    """The first search of a fresh process, measured in that process: vectors read from the rows,
    or mapped from the revision's files in ``vector_files`` (storage.vector_files)."""
    folder = None if vector_files is None else str(vector_files)
    code = (
        "import json, sys, time; sys.path.insert(0, 'bench'); import retrieval as r;"
        f"print(json.dumps(r.first_search({str(database)!r}, {notebook_id!r}, {query!r}, {folder!r})))"
    )
    output = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def first_search(database: str, notebook_id: str, query: str, vector_files: str | None) -> dict[str, float]:
    db = Database(Path(database))
    loader = load_revision if vector_files is None else VectorFiles(Path(vector_files)).load
    retriever = Retriever(HashingEmbedder(), VectorCache(UNBOUNDED, loader=loader))
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None
        before = _rss_mb()
        started = time.perf_counter()
        retriever.search(session, notebook, notebook.active_revision_id or "", query)
        seconds = time.perf_counter() - started
        return {"seconds": seconds, "rss_growth_mb": _rss_mb() - before}


def write_vector_files(database: Path, notebook_id: str, folder: Path, index: bool = False) -> tuple[Path, float]:
    """Write the revision's vector files as the coordinator does after activation, with or without
    the approximate index whatever the revision's size; the seconds it took."""
    db = Database(database)
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        started = time.perf_counter()
        files = VectorFiles(folder, index_min_chunks=0 if index else 2**62)
        files.ensure(session, notebook.active_revision_id, HashingEmbedder())
        seconds = time.perf_counter() - started
    db.dispose()
    return folder, seconds


def write_lexical(database: Path, notebook_id: str, folder: Path) -> tuple[LexicalFiles, float, float]:
    """Write the revision's full-text index as the coordinator does (its one pack's); where searches
    find it, the seconds it took and its size in MB."""
    db = Database(database)
    embedder = HashingEmbedder()
    files = VectorFiles(folder, index_min_chunks=2**62)
    with db.reader() as session:
        revision_id = session.get(Notebook, notebook_id).active_revision_id
        files.load(session, revision_id, embedder)  # its vectors' pack, which the index goes beside
        (pack,) = files.pack_folders(revision_id, embedder)
        started = time.perf_counter()
        files.ensure(session, revision_id, embedder)
        seconds = time.perf_counter() - started
    db.dispose()
    return files.lexical_packs, seconds, (pack / lexical_index.FILE).stat().st_size / 2**20


def lexical_row(database: Path, notebook_id: str, queries: list[str], folder: Path, size: int) -> str:
    lexical_files, writing, megabytes = write_lexical(database, notebook_id, folder)
    seconds = timings(database, notebook_id, queries, ["FTS5 in revision", "FTS5 own index", "hybrid, main table", "hybrid"],
                      lexical_files=lexical_files)
    same = sum(a == b for a, b in zip(
        top10(database, notebook_id, queries), top10(database, notebook_id, queries, lexical_files=lexical_files)))
    cells = " | ".join(f"{_p(values, 50):.1f} / {_p(values, 95):.1f}" for values in seconds.values())
    return f"| {size} | {writing:.1f} | {megabytes:.0f} | {cells} | {same}/{len(queries)} |"


def recall_at_50(database: Path, notebook_id: str, queries: list[str], folder: Path) -> float:
    """Mean share of the exact 50 nearest rows the indexed vector ranking returns in its first 50
    (a row scoring as high as the exact 50th counts: the bench's passages repeat, so ties abound)."""
    db = Database(database)
    embedder = HashingEmbedder()
    shares = []
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        served = VectorFiles(folder).load(session, notebook.active_revision_id, embedder)
        (part,) = served.parts
        matrix = part.matrix
        assert matrix.index is not None
        members = set(notebooks.member_ids(session, notebook))
        for query in queries:
            vector = embedder.embed([query])[0]
            exact = np.asarray(matrix.vectors) @ vector
            fiftieth = -np.partition(-exact, 49)[49]
            found = np.searchsorted(matrix.pks, vector_ranking(served, vector, members)[:50])
            shares.append(float(np.sum(exact[found] >= fiftieth - 1e-6)) / 50)
    db.dispose()
    return statistics.mean(shares)


def approximate_row(database: Path, notebook_id: str, queries: list[str], folder: Path, size: int) -> str:
    """The approximate index against exact search on one notebook: one row of the second table."""
    _, writing = write_vector_files(database, notebook_id, folder, index=True)
    loader = VectorFiles(folder).load
    exact = timings(database, notebook_id, queries, ["hybrid", "vectors"])
    indexed = timings(database, notebook_id, queries, ["hybrid", "vectors"], loader)
    same = sum(a == b for a, b in zip(top10(database, notebook_id, queries), top10(database, notebook_id, queries, loader)))
    mapped = cold(database, notebook_id, queries[-1], folder)
    index_mb = sum(path.stat().st_size for path in folder.glob("*/hnsw.usearch")) / 2**20
    cells = " | ".join(f"{_p(runs[name], 50):.1f} / {_p(runs[name], 95):.1f}"
                       for name in ("vectors", "hybrid") for runs in (exact, indexed))
    return (f"| {size} | {writing:.1f} | {index_mb:.0f} | {cells} | {recall_at_50(database, notebook_id, queries, folder):.3f} "
            f"| {same}/{len(queries)} | {mapped['seconds']:.2f} | {mapped['rss_growth_mb']:.0f} |")


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] * 1000


def print_table(caption: str, columns: list[str], rows: Iterable[str]) -> None:
    """A Markdown table under ``caption``, each row printed as soon as it is measured."""
    print(f"\n{caption}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="notebook sizes in chunks, comma-separated")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--small", type=int, default=10000, help="the small notebook's chunks")
    args = parser.parse_args()
    queries = qa_queries(args.queries)
    sizes = [int(n) for n in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{len(queries)} queries; p50 / p95 in ms, warm\n")
        print("| chunks | store (s) | hybrid | FTS5 in revision | FTS5 before | vectors | cold first search (s) "
              "| cold RSS growth (MB) | cold, vectors from files (s) | RSS growth (MB) | writing the files (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        databases: dict[int, tuple[Path, str]] = {}
        for size in sizes:
            database = Path(tmp) / f"{size}.sqlite3"
            notebook_id, stored = build(database, size)
            databases[size] = (database, notebook_id)
            seconds = timings(database, notebook_id, queries, ["hybrid", "FTS5 in revision", "FTS5 before", "vectors"])
            first = cold(database, notebook_id, queries[-1])
            files, writing = write_vector_files(database, notebook_id, Path(tmp) / f"vectors-{size}")
            mapped = cold(database, notebook_id, queries[-1], files)
            cells = " | ".join(f"{_p(seconds[name], 50):.1f} / {_p(seconds[name], 95):.1f}" for name in seconds)
            print(f"| {size} | {stored:.0f} | {cells} | {first['seconds']:.2f} | {first['rss_growth_mb']:.0f} "
                  f"| {mapped['seconds']:.2f} | {mapped['rss_growth_mb']:.0f} | {writing:.1f} |", flush=True)
        print_table(
            "The approximate index (storage/vector_index.py) against exact search, on the same notebooks "
            "(p50 / p95 ms, warm; cold: a fresh process, files and index mapped)",
            ["chunks", "writing files + index (s)", "index (MB)", "vectors, exact", "vectors, index", "hybrid, exact",
             "hybrid, index", "recall@50", "hybrid top-10 as exact", "cold first search (s)", "RSS growth (MB)"],
            (approximate_row(database, notebook_id, queries, Path(tmp) / f"index-{size}", size)
             for size, (database, notebook_id) in databases.items()),
        )
        print_table(
            "A revision's own full-text index (storage/lexical_index.py) against the main table, on the same "
            "notebooks (p50 / p95 ms, warm)",
            ["chunks", "writing it (s)", "file (MB)", "FTS5 in revision", "FTS5 own index", "hybrid, main table",
             "hybrid, own index", "hybrid top-10 as the main table's"],
            (lexical_row(database, notebook_id, queries, Path(tmp) / f"lexical-{size}", size)
             for size, (database, notebook_id) in databases.items()),
        )
        big, _ = databases[max(sizes)]
        alone_db = Path(tmp) / "small-alone.sqlite3"
        alone_id, _ = build(alone_db, args.small, first_passage=5000)
        inside_id, _ = build(big, args.small, first_passage=5000)
        print(f"\nA {args.small}-chunk notebook alone, and inside the {max(sizes)}-chunk instance (ms); "
              "\"own\": the revision's own full-text index\n")
        print("| where | hybrid, main table | hybrid, own index | FTS5 in revision | FTS5 before | FTS5 own index "
              "| first hit as alone "
              "| top-10 identical to alone | top-10 overlap with alone | own: top-10 identical to alone |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        places = {"alone": (alone_db, alone_id), "inside": (big, inside_id)}
        own = {where: write_lexical(database, notebook_id, Path(tmp) / f"lexical-{where}")[0]
               for where, (database, notebook_id) in places.items()}
        ranked_alone = top10(alone_db, alone_id, queries)
        own_alone = top10(alone_db, alone_id, queries, lexical_files=own["alone"])
        measured = places_timings(
            {where: (database, notebook_id, own[where]) for where, (database, notebook_id) in places.items()},
            queries, ["hybrid, main table", "hybrid", "FTS5 in revision", "FTS5 before", "FTS5 own index"],
        )
        for where, (database, notebook_id) in places.items():
            seconds = measured[where]
            cells = " | ".join(f"{_p(seconds[name], 50):.1f} / {_p(seconds[name], 95):.1f}" for name in seconds)
            pairs = list(zip(ranked_alone, top10(database, notebook_id, queries), strict=True))
            first = sum(a[:1] == b[:1] for a, b in pairs)
            same = sum(a == b for a, b in pairs)
            overlap = statistics.mean(len(set(a) & set(b)) / max(1, len(a)) for a, b in pairs)
            same_own = sum(a == b for a, b in zip(
                own_alone, top10(database, notebook_id, queries, lexical_files=own[where]), strict=True))
            print(f"| {where} | {cells} | {first}/{len(pairs)} | {same}/{len(pairs)} "
                  f"| {overlap:.0%} | {same_own}/{len(pairs)} |", flush=True)
        with Database(big).reader() as session:
            print(f"\nchunks in the biggest instance: {session.execute(text('SELECT count(*) FROM chunks')).scalar()}")


if __name__ == "__main__":
    main()
