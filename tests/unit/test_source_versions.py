"""Revisions share the chunks of sources that did not change (docs/decisions/0011).

A refresh carries unchanged sources into the new revision as pointers to the source versions
that hold their chunks, FTS rows and vectors; only what changed is stored. Search, evidence and
vectors of a revision follow those pointers, and retention deletes a source version only when no
kept revision serves it. Real corpus PDFs, stored as the index step stores them
(support.stored_notebooks).
"""
from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from storage import evidence, retention, revisions
from storage.db import Database
from storage.models import Notebook, Revision
from storage.retrieval import Retriever
from storage.vector_cache import VectorCache, load_matrix
from support.stored_notebooks import EMBEDDER, chunk_rows, refresh, start_refresh, stored_notebook

DOCUMENTS = ("dmca.pdf", "tracemonkey.pdf", "federal-register-2020-17221.pdf")
QUESTIONS = (
    "What does the DMCA say about circumvention of technological measures?",
    "How does TraceMonkey record traces of hot loops?",
    "What is a trace tree and how are nested loops handled?",
    "Who must register with the Federal Register notice?",
)
KEEP_NOTHING_OLD = (1, 0)  # the active revision only: no older complete revision, no audit


def _count(db: Database, table: str) -> int:
    with db.reader() as session:
        return _count_in(session, table)


def _count_in(session: Session, table: str) -> int:
    return session.connection().exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one()


def _rankings(db: Database, notebook_id: str, revision_id: str) -> list[list[tuple[str, str, str]]]:
    retriever = Retriever(EMBEDDER, VectorCache(1 << 30))
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        return [
            [(hit.chunk.resource_id, hit.chunk.chunk_id, hit.chunk.text)
             for hit in retriever.search(session, notebook, revision_id, question, limit=10)]
            for question in QUESTIONS
        ]


def _active(db: Database, notebook_id: str) -> str:
    with db.reader() as session:
        return session.get(Notebook, notebook_id).active_revision_id


def test_a_refresh_of_300_unchanged_sources_adds_no_chunk_rows(db: Database) -> None:
    passages = chunk_rows("tracemonkey.pdf")
    contents = {
        f"part-{n:03d}.pdf": [replace(row, chunk_id=f"{row.chunk_id}-{n}") for row in passages[n % 40:n % 40 + 3]]
        for n in range(300)
    }
    notebook_id = stored_notebook(db, "reader", tuple(contents), contents)
    before = {table: _count(db, table) for table in ("chunks", "chunk_vectors", "chunks_fts")}
    revision = _active(db, notebook_id)
    with db.session() as session:  # the draft, every source carried over
        start_refresh(session, session.get(Notebook, notebook_id), {}, {})
        assert {table: _count_in(session, table) for table in before} == before
    refresh(db, notebook_id)
    assert {table: _count(db, table) for table in before} == before
    assert _active(db, notebook_id) == revision, "nothing changed: the check is an audit"


def test_a_refresh_stores_only_what_changed_and_finds_the_same(db: Database) -> None:
    notebook_id = stored_notebook(db, "reader", DOCUMENTS)
    first = _active(db, notebook_id)
    ranked_first = _rankings(db, notebook_id, first)
    chunks = _count(db, "chunks")

    second = refresh(db, notebook_id, {"federal-register-2020-17221.pdf": "GeoTopo-komprimiert.pdf"})

    assert _active(db, notebook_id) == second
    assert _count(db, "chunks") == chunks + len(chunk_rows("GeoTopo-komprimiert.pdf"))
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        shared = evidence.chunk_in_revision(session, notebook, second, ranked_first[0][0][1])
        assert shared is not None and shared.revision_id == second
        assert shared.source_id in {s.id for s in revisions.sources(session, second)}
        served = {s.resource_id: s for s in revisions.sources(session, second)}
        assert served["dmca.pdf"].chunks_revision_id == first
        assert served["federal-register-2020-17221.pdf"].chunks_revision_id == second
        matrix = load_matrix(session, second, EMBEDDER)
    expected = sum(len(chunk_rows(name)) for name in ("dmca.pdf", "tracemonkey.pdf", "GeoTopo-komprimiert.pdf"))
    assert len(matrix.pks) == expected


def test_search_finds_the_same_top_ten_through_shared_versions(db: Database) -> None:
    """The same text, once stored for the first revision and now served to the second (two of
    three documents shared, one extracted again to the same text; the first revision's copy
    deleted so that bm25 sees the same table): the same ten passages in the same order."""
    notebook_id = stored_notebook(db, "reader", DOCUMENTS)
    before = _rankings(db, notebook_id, _active(db, notebook_id))
    second = refresh(db, notebook_id, {"tracemonkey.pdf": "tracemonkey.pdf"}, keep=KEEP_NOTHING_OLD)
    assert all(before) and _rankings(db, notebook_id, second) == before


def test_a_renamed_record_gets_its_chunks_indexed_under_the_new_name(db: Database) -> None:
    notebook_id = stored_notebook(db, "reader", DOCUMENTS)
    chunks = _count(db, "chunks")
    second = refresh(db, notebook_id, titles={"dmca.pdf": "Digital Millennium Copyright Act"})
    assert _active(db, notebook_id) == second
    assert _count(db, "chunks") == chunks + len(chunk_rows("dmca.pdf"))
    with db.reader() as session:
        served = {s.resource_id: s for s in revisions.sources(session, second)}
    assert served["dmca.pdf"].chunks_revision_id == second
    assert served["tracemonkey.pdf"].chunks_revision_id != second


def test_retention_deletes_a_source_version_only_when_no_kept_revision_serves_it(db: Database) -> None:
    notebook_id = stored_notebook(db, "reader", DOCUMENTS)
    first = _active(db, notebook_id)
    dmca, federal = len(chunk_rows("dmca.pdf")), len(chunk_rows("federal-register-2020-17221.pdf"))
    tracemonkey, geotopo = len(chunk_rows("tracemonkey.pdf")), len(chunk_rows("GeoTopo-komprimiert.pdf"))

    second = refresh(db, notebook_id, {"federal-register-2020-17221.pdf": "GeoTopo-komprimiert.pdf"},
                      keep=KEEP_NOTHING_OLD)
    # The first revision's federal-register version is gone; its other two serve the second.
    assert _count(db, "chunks") == dmca + tracemonkey + geotopo
    with db.reader() as session:
        assert session.get(Revision, first).state == "retired"
        assert revisions.get(session, session.get(Notebook, notebook_id), first) is None
        assert [s.resource_id for s in revisions.sources(session, first)] == ["dmca.pdf", "tracemonkey.pdf"]

    third = refresh(db, notebook_id, {"dmca.pdf": "federal-register-2020-17221.pdf"}, keep=KEEP_NOTHING_OLD)
    assert _count(db, "chunks") == federal + tracemonkey + geotopo
    with db.reader() as session:
        assert [s.resource_id for s in revisions.sources(session, first)] == ["tracemonkey.pdf"]
        assert session.get(Revision, second).state == "retired"
        served = {s.resource_id: s.chunks_revision_id for s in revisions.sources(session, third)}
    assert served == {"dmca.pdf": third, "tracemonkey.pdf": first, "federal-register-2020-17221.pdf": second}
    assert all(_rankings(db, notebook_id, third))

    refresh(db, notebook_id, {"tracemonkey.pdf": "tracemonkey.pdf", "federal-register-2020-17221.pdf": "dmca.pdf"},
             keep=KEEP_NOTHING_OLD)
    with db.reader() as session:
        assert session.get(Revision, first) is None and session.get(Revision, second) is None
        assert session.get(Revision, third).state == "retired"
    assert _count(db, "chunks") == _count(db, "chunk_vectors") == _count(db, "chunks_fts")


def test_a_kept_revision_keeps_every_version_it_serves(db: Database) -> None:
    notebook_id = stored_notebook(db, "reader", DOCUMENTS)
    first = _active(db, notebook_id)
    before = _rankings(db, notebook_id, first)
    refresh(db, notebook_id, {"dmca.pdf": "GeoTopo-komprimiert.pdf"})
    refresh(db, notebook_id, {"tracemonkey.pdf": "GeoTopo-komprimiert.pdf"})
    with db.session() as session:  # the default windows keep the first revision: it still answers
        retention.apply(session, session.get(Notebook, notebook_id), completed_keep=3, audit_keep=20)
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert len(load_matrix(session, first, EMBEDDER).pks) == sum(len(chunk_rows(name)) for name in DOCUMENTS)
        for resource_id, chunk_id, text in {hit for ranking in before for hit in ranking}:
            cited = evidence.chunk_in_revision(session, notebook, first, chunk_id)
            assert cited is not None and (cited.resource_id, cited.text) == (resource_id, text)
    assert {hit[0] for ranking in _rankings(db, notebook_id, first) for hit in ranking} == set(DOCUMENTS)
