"""Refresh cost of a big notebook: the storage work of a refresh that re-extracts 1 of 300 sources.

Usage: .venv/bin/python bench/refresh.py [--chunks 10000,100000] [--sources 300] [--refreshes 3]

A refresh carries every unchanged source into the new revision: ``ingestion.start_revision``
copies its chunks, FTS rows and vectors (``revisions.copy_source``). The notebook is built straight
in storage on the real schema (corpus text cut at the chunker's size, hashing-embedder vectors,
the FTS5 trigger indexing every row), so the figure is the coordinator's database work without
extraction. "store all" is storing every chunk once, the index part of a full ingest; each
refresh then carries 299 sources over (one changed source is left to extraction, which a real
refresh would then store). Revisions are kept, as audit and retention windows keep them, so the
chunks table grows with each refresh.

Two ways of reading a source's chunks run side by side, each on its own copy of the database:
"source only" filters chunks by ``source_id``, which no index leads (the query before this
change), and "revision + source" uses ``ix_chunks_revision_source`` (``revisions.chunk_rows``).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bignotebook import CHUNK_CHARS, CORPUS, VAULT, Passage, fill, new_notebook  # noqa: E402
from pipeline.embedder import HashingEmbedder  # noqa: E402
from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.extractors.pdf import PdfExtractor  # noqa: E402
from pipeline.planning import PlannedSource  # noqa: E402
from pipeline.types import SourceRef  # noqa: E402
from storage import ingestion, revisions  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from storage.models import Chunk, ChunkVector, Job, Notebook, Source  # noqa: E402

TEXT_PDFS = ("tracemonkey.pdf", "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf", "dmca.pdf")


def corpus_text() -> str:
    """The text of a few corpus PDFs, whitespace folded: realistic words for FTS5 to index."""
    pdf, limits = PdfExtractor(), ExtractLimits()
    texts = []
    for name in TEXT_PDFS:
        data = (CORPUS / "pdf" / name).read_bytes()
        texts += [s.text for s in pdf.extract(data, filename=name, mime="application/pdf", limits=limits).segments]
    return " ".join(" ".join(texts).split())


def source_only(session: Session, source: Source) -> revisions.CopiedChunks:
    """The query before ``ix_chunks_revision_source`` was used: a scan of every revision's chunks."""
    pairs = session.execute(
        select(Chunk, ChunkVector).join(ChunkVector, ChunkVector.chunk_pk == Chunk.id)
        .where(Chunk.source_id == source.id).order_by(Chunk.ordinal)
    ).all()
    return revisions.CopiedChunks(
        rows=[revisions.ChunkRow(c.chunk_id, c.ordinal, c.text, c.locator, v.vector) for c, v in pairs],
        embedder=pairs[0][1].embedder if pairs else "",
    )


def corpus_windows() -> Passage:
    """Windows of the corpus PDFs' text at the chunker's size, at offsets 997 characters apart."""
    text, embedder = corpus_text(), HashingEmbedder()

    def passage(k: int) -> tuple[str, bytes]:
        start = (k * 997) % (len(text) - CHUNK_CHARS)
        window = text[start:start + CHUNK_CHARS]
        return window, embedder.embed([window])[0].tobytes()

    return passage


def build(database: Path, chunks: int, sources: int, passage: Passage) -> tuple[str, float]:
    """A notebook whose active revision holds ``chunks`` chunks over ``sources`` sources; returns
    its id and the seconds storing the chunks took."""
    upgrade(database)
    db = Database(database)
    with db.session() as session:
        notebook, revision = new_notebook(session, "Big", sources)
        stored = fill(session, revision, chunks, sources, passage)
        revisions.activate(session, notebook, revision)
        notebook_id = notebook.id
    db.dispose()
    return notebook_id, stored


def refresh(database: Path, notebook_id: str) -> float:
    """Seconds to start a revision that carries every source but the first over."""
    db = Database(database)
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        previous = ingestion.previous_sources(session, notebook)
        job = Job(vault_hash=VAULT, workspace_id=notebook.workspace_id, notebook_id=notebook.id, kind="ingest",
                  params={}, state="running")
        session.add(job)
        session.flush()
        plans = [
            PlannedSource(SourceRef(resource_id, field, "attachment", value), "extract" if n == 0 else "reuse",
                          prev.fingerprint, prev, resource_title=prev.resource_title)
            for n, ((resource_id, field, value), prev) in enumerate(sorted(previous.items()))
        ]
        started = time.perf_counter()
        ingestion.start_revision(session, job, notebook, plans)
        seconds = time.perf_counter() - started
    db.dispose()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000,100000", help="notebook sizes, comma-separated")
    parser.add_argument("--sources", type=int, default=300)
    parser.add_argument("--refreshes", type=int, default=3)
    args = parser.parse_args()
    passage = corpus_windows()
    variants: dict[str, Callable[[Session, Source], revisions.CopiedChunks]] = {
        "source only": source_only, "revision + source": revisions.chunk_rows,
    }
    print(f"{args.sources} sources; each refresh carries {args.sources - 1} over; revisions are kept\n")
    print("| chunks | store all (s) | reading a source's chunks | " +
          " | ".join(f"refresh {n + 1} (s)" for n in range(args.refreshes)) + " | last refresh / store all |")
    print("|---|---|---|" + "---|" * args.refreshes + "---|")
    for chunks in (int(n) for n in args.chunks.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            built = Path(tmp) / "built.sqlite3"
            notebook_id, stored = build(built, chunks, args.sources, passage)
            copies = {name: Path(tmp) / f"{n}.sqlite3" for n, name in enumerate(variants)}
            for copy in copies.values():
                shutil.copyfile(built, copy)
            times: dict[str, list[float]] = {name: [] for name in variants}
            for _ in range(args.refreshes):
                for name, read in variants.items():  # interleaved: a slow spell hits both
                    revisions.chunk_rows = read  # type: ignore[assignment]
                    times[name].append(refresh(copies[name], notebook_id))
            for name in variants:
                cells = " | ".join(f"{t:.2f}" for t in times[name])
                print(f"| {chunks} | {stored:.1f} | {name} | {cells} | {times[name][-1] / stored:.1%} |")


if __name__ == "__main__":
    main()
