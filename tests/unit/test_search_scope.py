"""A notebook's search sees only its own revision's rows, whatever else the instance holds.

In the main FTS5 table bm25 takes its term statistics from the whole table, so another notebook's
rows can reorder near-equal hits (docs/decisions/0009 measures how often); what they must never do
is appear in the results, or push what a question finds first below second. A revision's own index
(storage.lexical_index) removes even that. Real corpus PDFs in one database file
(support.stored_notebooks).
"""
from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from pipeline.fts_query import build_match_query
from storage import evidence, notebooks
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Chunk, Notebook
from storage.retrieval import Retriever
from storage.vector_cache import VectorCache
from support.statements import recorded_statements
from support.stored_notebooks import EMBEDDER, stored_notebook

QUESTIONS = (
    "What does the DMCA say about circumvention of technological measures?",
    "Who is liable for copyright infringement by online service providers?",
    "How does TraceMonkey record traces of hot loops?",
    "What is a trace tree and how are nested loops handled?",
    "type specialization of JavaScript values",
    "How long is the term of protection for vessel hull designs?",
)


def _rankings(db: Database, notebook_id: str) -> list[list[tuple[str, str, str]]]:
    retriever = Retriever(EMBEDDER, VectorCache(1 << 30))
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        return [
            [(hit.chunk.revision_id, hit.chunk.resource_id, hit.chunk.chunk_id)
             for hit in retriever.search(session, notebook, notebook.active_revision_id, question, limit=10)]
            for question in QUESTIONS
        ]


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Database:
    database = tmp_path_factory.mktemp("scope") / "notebooks.sqlite3"
    upgrade(database)
    return Database(database)


def test_a_small_notebook_finds_the_same_beside_a_bigger_one(instance: Database) -> None:
    small = stored_notebook(instance, "small", ("dmca.pdf", "tracemonkey.pdf"))
    alone = _rankings(instance, small)
    stored_notebook(instance, "big", ("dmca.pdf", "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf"))
    beside = _rankings(instance, small)
    assert all(alone), "every question finds something"
    # In the main table bm25's statistics are the whole table's (decision 0009), so two near-equal
    # first hits may trade places (measured: fused scores 0.0491 / 0.0475 for one of these
    # questions); a first hit never falls further than second. That is a revision's ranking until
    # the coordinator writes its own index; from then on it is exact (tests/unit/test_lexical_index.py).
    for by_itself, next_to_big in zip(alone, beside, strict=True):
        assert by_itself[0] in next_to_big[:2] and next_to_big[0] in by_itself[:2]
    assert {revision for ranking in beside for revision, _, _ in ranking} == {alone[0][0][0]}


def test_the_lexical_list_reaches_past_a_removed_resource(instance: Database) -> None:
    """The index ranks before the membership join: when the best rows belong to a resource removed
    since the revision was built, a deeper list still fills the requested candidates."""
    notebook_id = stored_notebook(instance, "removing", ("dmca.pdf", "tracemonkey.pdf"))
    match = build_match_query("copyright protection of online service providers")
    assert match is not None
    with instance.session() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        revision_id = notebook.active_revision_id
        before = evidence.fts_candidates(session, notebook, revision_id, match, 5)
        assert {_resource(session, pk) for pk, _ in before} == {"dmca.pdf"}
        notebooks.remove_resource(session, notebook, "dmca.pdf")
    with instance.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        after = evidence.fts_candidates(session, notebook, revision_id, match, 5)
        assert len(after) == 5 and {_resource(session, pk) for pk, _ in after} == {"tracemonkey.pdf"}


def _resource(session: Session, pk: int) -> str:
    chunk = session.get(Chunk, pk)
    assert chunk is not None
    return chunk.resource_id


def test_a_short_lexical_list_costs_one_query(instance: Database) -> None:
    """Fewer matches than asked for is the usual case of a small notebook or a rare word: the
    index's own list says there are no more, so no second query is run to find out."""
    notebook_id = stored_notebook(instance, "rare", ("dmca.pdf",))
    match = build_match_query("vessel hull")
    assert match is not None
    with instance.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        with recorded_statements(session) as statements:
            found = evidence.fts_candidates(session, notebook, notebook.active_revision_id, match, 500)
    assert 0 < len(found) < 500
    assert len([statement for statement in statements if "chunks_fts" in statement]) == 1


def test_a_search_pauses_twice_for_waiting_requests_and_counts_only_its_own_time(
    instance: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The web app lets waiting requests run between a search's phases (app.cooperative); the
    search latency metric counts the search's own seconds, not theirs. The clock here moves only
    while others run, so the search's own time is exactly 0."""
    notebook_id = stored_notebook(instance, "pausing", ("dmca.pdf",))
    clock = [0.0]
    monkeypatch.setattr("storage.retrieval.time.perf_counter", lambda: clock[0])
    paused: list[float] = []
    observed: list[float] = []

    def others_run() -> None:
        paused.append(clock[0])
        clock[0] += 5.0

    retriever = Retriever(EMBEDDER, VectorCache(1 << 30), observe=observed.append, between_phases=others_run)
    with instance.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        hits = retriever.search(session, notebook, notebook.active_revision_id, QUESTIONS[0], limit=5)

    assert hits and paused == [0.0, 5.0] and observed == [0.0]
