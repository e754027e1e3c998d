"""Refresh cost of a big notebook: the coordinator's storage work when 1 or 0 of 300 sources changed.

Usage: .venv/bin/python bench/refresh.py [--chunks 10000,100000] [--sources 300] [--refreshes 3]

A refresh carries every unchanged source into the new revision (``ingestion.start_revision``),
stores what was extracted again, then activates the revision, or keeps it as an audit record when
nothing changed, and applies retention (``ingestion.finish_if_complete``, default windows). The
notebook is built straight in storage on the real schema (corpus text cut at the chunker's size,
hashing-embedder vectors, the FTS5 trigger indexing every row), so the figure is that database
work without extraction. "store all" is storing every chunk once, the index part of a full ingest.

Two ways of carrying a source run side by side, each on its own copy of the database, interleaved:
"share" points the new revision's source at the stored source version (``revisions.share_chunks``,
docs/decisions/0011) and "copy" stores its chunks, FTS rows and vectors again, as every refresh
did before. The last column is the database's size after the refreshes.

The second table is what the coordinator writes after each activation (``ingest.write_vectors``):
the revision's vectors, then their full-text index ("packs": a pack of the changed sources' rows
beside the packs it shares, storage.vector_packs; "whole": every row again, as before packs,
measured by giving the same revision a folder with no earlier packs).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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
from storage.models import Job, Notebook, Source  # noqa: E402
from storage.vector_files import VectorFiles  # noqa: E402

TEXT_PDFS = ("tracemonkey.pdf", "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf", "dmca.pdf")


def corpus_text() -> str:
    """The text of a few corpus PDFs, whitespace folded: realistic words for FTS5 to index."""
    pdf, limits = PdfExtractor(), ExtractLimits()
    texts = []
    for name in TEXT_PDFS:
        data = (CORPUS / "pdf" / name).read_bytes()
        texts += [s.text for s in pdf.extract(data, filename=name, mime="application/pdf", limits=limits).segments]
    return " ".join(" ".join(texts).split())


def copy_chunks(session: Session, previous: Source, target: Source) -> None:
    """Carrying a source as every refresh did before source versions were shared."""
    copied = revisions.chunk_rows(session, previous)
    revisions.store_chunks(session, target, copied.rows, embedder=copied.embedder)


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


def refresh(database: Path, notebook_id: str, changed: int, passage: Passage, number: int) -> float:
    """Seconds of a refresh that extracts the first ``changed`` sources again and carries the rest."""
    db = Database(database)
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        previous = ingestion.previous_sources(session, notebook)
        job = Job(vault_hash=VAULT, workspace_id=notebook.workspace_id, notebook_id=notebook.id, kind="ingest",
                  params={}, state="running")
        session.add(job)
        session.flush()
        plans = [
            PlannedSource(SourceRef(resource_id, field, "attachment", value), "extract" if n < changed else "reuse",
                          f"{prev.fingerprint}+{number}" if n < changed else prev.fingerprint, prev,
                          resource_title=prev.resource_title)
            for n, ((resource_id, field, value), prev) in enumerate(sorted(previous.items()))
        ]
        started = time.perf_counter()
        ingestion.start_revision(session, job, notebook, plans)
        for source in revisions.sources(session, job.revision_id):
            if source.state == "indexing":  # what the index step stores for an extracted source
                passages = [passage(number * 7919 + k) for k in range(30)]
                rows = [revisions.ChunkRow(f"n{number}-{k}", k, text, {"page": 1}, vector)
                        for k, (text, vector) in enumerate(passages)]
                revisions.store_chunks(session, source, rows, embedder=HashingEmbedder.name)
                source.state = "available"
        ingestion.finish_if_complete(session, job, notebook, (3, 20))
        seconds = time.perf_counter() - started
    db.dispose()
    return seconds


def files_after_refreshes(
    database: Path, notebook_id: str, passage: Passage, refreshes: int, root: Path
) -> dict[str, list[tuple[float, int]]]:
    """Seconds and rows written after each refresh of 1 changed source, with packs and whole,
    interleaved: the vectors (``files.load``), then the full-text index (``files.ensure``)."""
    shared, embedder = VectorFiles(root / "shared"), HashingEmbedder()
    db = Database(database)
    with db.reader() as session:
        shared.ensure(session, session.get(Notebook, notebook_id).active_revision_id, embedder)
    db.dispose()
    written: dict[str, list[tuple[float, int]]] = {}
    for number in range(refreshes):
        refresh(database, notebook_id, 1, passage, 100 + number)
        db = Database(database)
        with db.reader() as session:
            revision_id = session.get(Notebook, notebook_id).active_revision_id
            for name, files in (("packs", shared), ("whole", VectorFiles(root / f"whole-{number}"))):
                started = time.perf_counter()
                vectors = files.load(session, revision_id, embedder)
                newest = max(vectors.parts, key=lambda part: part.matrix.pks.max(initial=0))
                written.setdefault(f"vectors, {name}", []).append((time.perf_counter() - started, len(newest.matrix.pks)))
                started = time.perf_counter()
                files.ensure(session, revision_id, embedder)
                written.setdefault(f"full-text index, {name}", []).append((time.perf_counter() - started, len(newest.matrix.pks)))
        db.dispose()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000,100000", help="notebook sizes, comma-separated")
    parser.add_argument("--sources", type=int, default=300)
    parser.add_argument("--refreshes", type=int, default=3)
    args = parser.parse_args()
    passage = corpus_windows()
    carry: dict[str, Callable[[Session, Source, Source], None]] = {
        "share": revisions.share_chunks, "copy": copy_chunks,
    }
    print(f"{args.sources} sources; default retention (3 complete revisions, 20 audits kept)\n")
    print("| chunks | store all (s) | changed | carry | " +
          " | ".join(f"refresh {n + 1} (s)" for n in range(args.refreshes)) + " | last / store all | database (MB) |")
    print("|---|---|---|---|" + "---|" * args.refreshes + "---|---|")
    files_rows: list[tuple[int, dict[str, list[tuple[float, int]]]]] = []
    for chunks in (int(n) for n in args.chunks.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            built = Path(tmp) / "built.sqlite3"
            notebook_id, stored = build(built, chunks, args.sources, passage)
            for changed in (1, 0):
                copies = {name: Path(tmp) / f"{name}-{changed}.sqlite3" for name in carry}
                for copy in copies.values():
                    shutil.copyfile(built, copy)
                times: dict[str, list[float]] = {name: [] for name in carry}
                for number in range(args.refreshes):
                    for name, way in carry.items():  # interleaved: a slow spell hits both
                        revisions.share_chunks = way  # type: ignore[assignment]
                        times[name].append(refresh(copies[name], notebook_id, changed, passage, number))
                for name in carry:
                    cells = " | ".join(f"{t:.2f}" for t in times[name])
                    size = copies[name].stat().st_size / 2**20
                    print(f"| {chunks} | {stored:.1f} | {changed} | {name} | {cells} | "
                          f"{times[name][-1] / stored:.1%} | {size:.0f} |")
                    copies[name].unlink()
            revisions.share_chunks = carry["share"]  # type: ignore[assignment]
            written = files_after_refreshes(built, notebook_id, passage, args.refreshes, Path(tmp) / "vectors")
            files_rows.append((chunks, written))
    print("\nThe coordinator's files after each refresh of 1 changed source: seconds (rows written)\n")
    print("| chunks | written | " + " | ".join(f"refresh {n + 1}" for n in range(args.refreshes)) + " |")
    print("|---|---|" + "---|" * args.refreshes)
    for chunks, written in files_rows:
        for name, runs in written.items():
            print(f"| {chunks} | {name} | " + " | ".join(f"{seconds:.2f} ({rows})" for seconds, rows in runs) + " |")


if __name__ == "__main__":
    main()
