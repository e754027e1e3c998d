"""Sharing source versions and searching a revision's own files leave search results as they were,
on the corpus's own benchmark sets: SQuAD's 48 articles (2,067 paragraphs) with every 20th of
their questions, and 1,000 SciFact abstracts with the 300 test claims.

One revision is searched three ways, and every question's top 10 must be the same chunks in the
same order:

* before: the main FTS5 table and vectors read from the rows (as before decisions 0013 and 0022);
* its files: the revision's own lexical file (posting lists) and memory-mapped vector files;
* shared: a refresh that changed nothing, whose sources serve the first revision's source
  versions instead of copies (decision 0011), searched from its own files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from storage import notebooks, revisions
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Notebook
from storage.retrieval import Retriever
from storage.vector_cache import VectorCache
from storage.vector_files import VectorFiles
from support.jsonl import read_jsonl
from support.stored_notebooks import EMBEDDER, refresh_changing_nothing, stored_notebook

TOP = 10
SOURCES = 48  # SciFact's abstracts are spread over as many sources as SQuAD has articles
UNBOUNDED = 1 << 62


def _squad(corpus_dir: Path) -> tuple[dict[str, list[str]], list[str]]:
    squad = corpus_dir / "qa" / "squad_v1.1_dev"
    articles: dict[str, list[str]] = {}
    for paragraph in read_jsonl(squad / "corpus.jsonl"):
        articles.setdefault(paragraph["title"], []).append(paragraph["text"])
    questions = [query["text"] for query in read_jsonl(squad / "queries.jsonl")][::20]
    return articles, questions


def _scifact(corpus_dir: Path) -> tuple[dict[str, list[str]], list[str]]:
    scifact = corpus_dir / "qa" / "scifact"
    tested = {line.split("\t")[0] for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    abstracts = [f"{doc['title']} {doc['text']}" for doc in read_jsonl(scifact / "corpus.jsonl")][:1000]
    groups = {f"abstracts-{n:02d}": abstracts[n::SOURCES] for n in range(SOURCES)}
    return groups, [query["text"] for query in read_jsonl(scifact / "queries.jsonl") if query["_id"] in tested]


def _rows(texts: list[str], name: str) -> list[revisions.ChunkRow]:
    vectors = EMBEDDER.embed(texts)
    return [
        revisions.ChunkRow(f"{name}-{i}", i, text, {"paragraph": i + 1}, vector.tobytes())
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


def _top(db: Database, retriever: Retriever, notebook_id: str, revision_id: str, questions: list[str]) -> list[list[int]]:
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        return [[hit.chunk.pk for hit in retriever.search(session, notebook, revision_id, q, limit=TOP)] for q in questions]


@pytest.mark.parametrize("dataset", [_squad, _scifact], ids=["squad", "scifact"])
def test_every_question_finds_the_same_top_10_before_and_after_the_index_changes(
    corpus_dir: Path, tmp_path: Path, dataset: Any
) -> None:
    documents, questions = dataset(corpus_dir)
    upgrade(tmp_path / "notebooks.sqlite3")
    db = Database(tmp_path / "notebooks.sqlite3")
    contents = {name: _rows(texts, name) for name, texts in documents.items()}
    notebook_id = stored_notebook(db, "reader", tuple(contents), contents)
    with db.reader() as session:
        first = session.get(Notebook, notebook_id).active_revision_id
        assert set(notebooks.member_ids(session, session.get(Notebook, notebook_id))) == set(contents)
    files = VectorFiles(tmp_path / "vectors")
    from_files = Retriever(EMBEDDER, VectorCache(UNBOUNDED, loader=files.load), lexical_files=files.lexical_packs)

    before = _top(db, Retriever(EMBEDDER, VectorCache(UNBOUNDED)), notebook_id, first, questions)
    shared = refresh_changing_nothing(db, notebook_id)
    with db.reader() as session:
        for revision_id in (first, shared):
            files.ensure(session, revision_id, EMBEDDER)
            assert files.lexical_packs(revision_id, EMBEDDER) is not None

    assert sum(map(len, before)) == TOP * len(questions), "a question found fewer than 10 chunks"
    assert _top(db, from_files, notebook_id, first, questions) == before
    assert _top(db, from_files, notebook_id, shared, questions) == before
