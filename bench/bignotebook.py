"""Big notebooks built straight in storage, on the real schema, for the storage benchmarks.

The chunks go through ``revisions.store_chunks`` (the FTS5 trigger indexes every row, vectors are
stored beside them), as the index step stores them; nothing is extracted.
"""
from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy.orm import Session  # noqa: E402

from pipeline.embedder import HashingEmbedder  # noqa: E402
from storage import accounts, notebooks, revisions  # noqa: E402
from storage.models import Job, Notebook, Revision  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
QA = CORPUS / "qa"
QA_SETS = ("scifact", "squad_v1.1_dev")
CHUNK_CHARS = 1200
VAULT = "bench"

# The text and vector of the ``k``-th chunk of a notebook.
Passage = Callable[[int], tuple[str, bytes]]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def qa_pool() -> Passage:
    """Real passages (SciFact abstracts, SQuAD paragraphs cut at the chunker's size) and their
    hashing-embedder vectors; a notebook bigger than the pool takes its passages in turn."""
    texts = []
    for name in QA_SETS:
        for document in _jsonl(QA / name / "corpus.jsonl"):
            body = " ".join(f"{document.get('title', '')} {document['text']}".split())
            texts += [body[start:start + CHUNK_CHARS] for start in range(0, len(body), CHUNK_CHARS)]
    vectors = [vector.tobytes() for vector in HashingEmbedder().embed(texts)]
    return lambda k: (texts[k % len(texts)], vectors[k % len(texts)])


def qa_queries(count: int, seed: int = 7) -> list[str]:
    """Questions and claims of the same QA sets, drawn evenly from each."""
    rng = random.Random(seed)
    queries: list[str] = []
    for name in QA_SETS:
        texts = [query["text"] for query in _jsonl(QA / name / "queries.jsonl")]
        queries += rng.sample(texts, count // len(QA_SETS))
    return queries


def new_notebook(session: Session, title: str, sources: int) -> tuple[Notebook, Revision]:
    """A notebook of ``sources`` resources owned by the bench user, and a draft revision of it."""
    token = accounts.add_user(session, VAULT, f"bench-{title}", "lab", "editor")[1]
    principal = accounts.principal_for_token(session, VAULT, token)
    assert principal is not None
    notebook = notebooks.create(
        session, principal, title=title, visibility="private", conversation_mode="shared",
        table_id="t", resource_ids=[f"r{i:04d}" for i in range(sources)],
    )
    job = Job(vault_hash=VAULT, workspace_id=notebook.workspace_id, notebook_id=notebook.id, kind="ingest",
              params={}, state="running")
    session.add(job)
    session.flush()
    return notebook, revisions.create_draft(session, notebook, job.id)


def fill(session: Session, revision: Revision, chunks: int, sources: int, passage: Passage) -> float:
    """Store ``chunks`` chunks over ``sources`` sources into ``revision``; the seconds it took."""
    per_source = chunks // sources
    contents = [
        [revisions.ChunkRow(f"c{i}-{n}", n, *_with_page(passage(i * per_source + n), n)) for n in range(per_source)]
        for i in range(sources)
    ]
    started = time.perf_counter()
    for i, rows in enumerate(contents):
        source = revisions.add_source(
            session, revision, resource_id=f"r{i:04d}", field="file", kind="attachment",
            value=f"files/{i:04d}.pdf", fingerprint=f"f{i}", state="available", chunking="bench",
        )
        revisions.store_chunks(session, source, rows, embedder=HashingEmbedder.name)
    return time.perf_counter() - started


def _with_page(text_and_vector: tuple[str, bytes], ordinal: int) -> tuple[str, dict, bytes]:
    text, vector = text_and_vector
    return text, {"page": ordinal // 3 + 1}, vector
