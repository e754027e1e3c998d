"""A revision's own full-text index (storage.lexical_index), one file per pack of its rows: written by
the coordinator beside the packs' vectors, it ranks a notebook exactly as the main table ranks it
alone in its instance, and another notebook's rows change nothing. Real corpus PDFs
(support.stored_notebooks)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from pipeline.embedder import Embedder, HashingEmbedder
from pipeline.fts_query import match_terms
from storage import lexical_index, notebooks, revisions
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Chunk, Notebook
from storage.retrieval import CANDIDATES, Retriever
from storage.vector_cache import VectorCache
from storage.vector_files import VectorFiles
from support.stored_notebooks import EMBEDDER, refresh, stored_notebook
from test_search_scope import QUESTIONS as SCOPE_QUESTIONS

# The scope test's questions, and one whose two words are common in the DMCA summary.
QUESTIONS = (*SCOPE_QUESTIONS, "safe harbor")


@pytest.fixture()
def db(tmp_path: Path) -> Database:
    upgrade(tmp_path / "notebooks.sqlite3")
    return Database(tmp_path / "notebooks.sqlite3")


def _search(db: Database, notebook_id: str, files: VectorFiles | None) -> list[list[tuple[int, float]]]:
    """Each question's lexical candidates (pk, bm25) as the retriever gets them: from the
    revision's own file when ``files`` has it, else from the main table."""
    return [_candidates(db, notebook_id, question, files) for question in QUESTIONS if match_terms(question)]


def _written(db: Database, tmp_path: Path, user: str) -> tuple[VectorFiles, str, str, Path]:
    """A notebook of the DMCA summary whose revision has its file: the files, ids and the file's path."""
    files = VectorFiles(tmp_path / "vectors")
    notebook_id = stored_notebook(db, user, ("dmca.pdf",))
    revision_id = _ensure(db, notebook_id, files)
    path = _file(files, revision_id)
    assert path is not None
    return files, notebook_id, revision_id, path


def _file(files: VectorFiles, revision_id: str) -> Path | None:
    """The full-text index of the revision's one pack, once written."""
    packs = files.lexical_packs(revision_id, EMBEDDER)
    if packs is None:
        return None
    (pack,) = packs
    return pack.path


def _ensure(db: Database, notebook_id: str, files: VectorFiles) -> str:
    with db.reader() as session:
        revision_id = session.get(Notebook, notebook_id).active_revision_id
        files.ensure(session, revision_id, EMBEDDER)
        return revision_id


def test_a_notebook_alone_ranks_the_same_in_its_own_index_as_in_the_main_table(db: Database, tmp_path: Path) -> None:
    """The switch to the revision's file changes no result: same rows, same order, same scores."""
    notebook_id = stored_notebook(db, "alone", ("dmca.pdf", "tracemonkey.pdf"))
    main = _search(db, notebook_id, None)
    files = VectorFiles(tmp_path / "vectors")
    _ensure(db, notebook_id, files)
    own = _search(db, notebook_id, files)
    assert all(main) and [len(ranking) for ranking in main] == [min(CANDIDATES, len(r)) for r in own]
    for by_main, by_file in zip(main, own, strict=True):
        assert [pk for pk, _ in by_main] == [pk for pk, _ in by_file]
        assert [score for _, score in by_main] == [score for _, score in by_file], "bm25 to the bit"


# Rows that take bm25's corners: stems, folded accents, weighted context, a word in more than half of
# the rows (the smallest idf), a phrase, and a row whose weighted hits do not fit in 16 bits.
CORNERS = {
    "runners.md": ["Running late, she runs; they ran to the café.", "A cafe sells coffee; the cafe is open late.",
                   "Copyright law protects works; copyright law is old law.", "Late trains run late at night."],
    "long.md": ["la " * 70_000, "Late night coffee at the CAFÉ; law students run.", "Nothing of note is said here, late."],
}
CORNER_QUESTIONS = ("run", "café late", "copyright law", "la la", "late", "CAFE coffee running", "night trains")


def test_posting_lists_score_every_corner_exactly_as_fts5(db: Database, tmp_path: Path) -> None:
    contents = {
        name: [revisions.ChunkRow(f"{name}-{i}", i, text, {"page": 1}, EMBEDDER.embed([text])[0].tobytes())
               for i, text in enumerate(texts)]
        for name, texts in CORNERS.items()
    }
    notebook_id = stored_notebook(db, "corners", tuple(CORNERS), contents)
    files = VectorFiles(tmp_path / "vectors")
    revision_id = _ensure(db, notebook_id, files)
    path = _file(files, revision_id)
    assert path is not None
    with sqlite3.connect(path) as connection:
        widths = {4 * len(hits) // len(rows) for rows, hits in connection.execute("SELECT rows, hits FROM postings")}
    assert widths == {2, 4}, "a row's 70,000 hits of one word are kept whole"
    assert _candidates(db, notebook_id, revision_id, None) == _candidates(db, notebook_id, revision_id, files) == [], (
        "a word only in the revision id's column matches nothing")
    for question in CORNER_QUESTIONS:
        main, own = (_candidates(db, notebook_id, question, f) for f in (None, files))
        assert main and [pk for pk, _ in main] == [pk for pk, _ in own], question
        assert [score for _, score in main] == [score for _, score in own], question


def _candidates(
    db: Database, notebook_id: str, question: str, files: VectorFiles | None, embedder: Embedder = EMBEDDER
) -> list[tuple[int, float]]:
    assert match_terms(question)
    retriever = Retriever(embedder, VectorCache(1 << 30), lexical_files=files.lexical_packs if files else lambda r, e: None)
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        members = set(notebooks.member_ids(session, notebook))
        return retriever.lexical_candidates(session, notebook, notebook.active_revision_id, match_terms(question), members)


def test_another_notebooks_rows_change_nothing_in_a_revisions_own_index(db: Database, tmp_path: Path) -> None:
    files = VectorFiles(tmp_path / "vectors")
    small = stored_notebook(db, "small", ("dmca.pdf", "tracemonkey.pdf"))
    _ensure(db, small, files)
    alone = _search(db, small, files)
    main_alone = _search(db, small, None)
    stored_notebook(db, "big", ("dmca.pdf", "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf"))
    assert _search(db, small, files) == alone, "the same rows in the same order with the same scores"
    # What the file protects from: the main table's statistics now count the big notebook's rows.
    assert _search(db, small, None) != main_alone


def test_the_file_reaches_past_a_removed_resource_and_never_returns_its_rows(db: Database, tmp_path: Path) -> None:
    files = VectorFiles(tmp_path / "vectors")
    notebook_id = stored_notebook(db, "removing", ("dmca.pdf", "tracemonkey.pdf"))
    path = _file(files, _ensure(db, notebook_id, files))
    assert path is not None
    terms = match_terms("copyright protection of online service providers")
    with db.session() as session:
        before = lexical_index.candidates([lexical_index.Pack(path)], terms, 5, {"dmca.pdf", "tracemonkey.pdf"}.__contains__)
        assert {session.get(Chunk, pk).resource_id for pk, _ in before} == {"dmca.pdf"}
        notebooks.remove_resource(session, session.get(Notebook, notebook_id), "dmca.pdf")
    after = _search(db, notebook_id, files)
    with db.reader() as session:
        resources = {session.get(Chunk, pk).resource_id for ranking in after for pk, _ in ranking}
    assert resources == {"tracemonkey.pdf"}
    deeper = lexical_index.candidates([lexical_index.Pack(path)], terms, 5, {"tracemonkey.pdf"}.__contains__)
    assert len(deeper) == 5


def test_an_unreadable_file_is_removed_the_main_table_answers_and_the_sweeper_wants_it(
    db: Database, tmp_path: Path
) -> None:
    files = VectorFiles(tmp_path / "vectors")
    notebook_id = stored_notebook(db, "torn", ("dmca.pdf",))
    revision_id = _ensure(db, notebook_id, files)
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == []
    path = _file(files, revision_id)
    assert path is not None
    expected = _search(db, notebook_id, None)
    path.write_bytes(b"torn" * 1024)
    assert _search(db, notebook_id, files) == expected
    assert _file(files, revision_id) is None
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
        assert files.wanting(session, EMBEDDER) == []
    assert _search(db, notebook_id, files) == expected


def test_the_file_uses_the_main_tables_tokenizer(db: Database, tmp_path: Path) -> None:
    """Both indexes must agree on what a word is, or a word could match in one and not the other."""
    with sqlite3.connect(db.path) as connection:
        (schema,) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    assert f"tokenize='{lexical_index.TOKENIZER}'" in schema
    assert "revision_id, context, text" in schema



def test_only_a_damaged_file_is_removed(db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query the file cannot run is answered by the main table and the file is kept; a file that
    is not an index (here: an empty database) is removed, to be written again."""
    files, notebook_id, revision_id, path = _written(db, tmp_path, "failing")
    expected = _search(db, notebook_id, None)

    def busy(*args: object) -> None:
        raise sqlite3.OperationalError("interrupted")

    with monkeypatch.context() as patched:
        patched.setattr(lexical_index, "candidates", busy)
        assert _search(db, notebook_id, files) == expected
    assert _file(files, revision_id) == path
    path.unlink()
    sqlite3.connect(path).close()  # a database without the index's tables
    assert _search(db, notebook_id, files) == expected
    assert _file(files, revision_id) is None


def test_a_file_of_another_format_is_written_again(db: Database, tmp_path: Path) -> None:
    files, notebook_id, revision_id, path = _written(db, tmp_path, "older")
    expected = _search(db, notebook_id, files)
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {lexical_index.FORMAT - 1}")
    assert _search(db, notebook_id, files) == expected, "the main table answers meanwhile"
    assert _file(files, revision_id) is None
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
    assert _file(files, revision_id) is not None
    assert _search(db, notebook_id, files) == expected


def test_files_of_older_formats_are_removed_once_the_current_one_is_written(db: Database, tmp_path: Path) -> None:
    """An older code's file has another name (the format is in it) and lay in the revision's folder:
    nothing reads it any more, and at 1M chunks it holds ~500 MB."""
    files, _, revision_id, path = _written(db, tmp_path, "leftover")
    older = [files.folder(revision_id, EMBEDDER) / name for name in ("lexical.sqlite3", "lexical-2.sqlite3")]
    for file in older:
        file.write_bytes(b"an older format")
    path.unlink()
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
    assert _file(files, revision_id) == path
    assert not any(file.exists() for file in older)


def test_posting_lists_sqlite_finds_sound_but_that_cannot_be_read_count_as_damaged(db: Database, tmp_path: Path) -> None:
    files, notebook_id, revision_id, path = _written(db, tmp_path, "damaged")
    expected = _search(db, notebook_id, files)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE row_lengths SET lengths = zeroblob(12)")  # not a whole number of int64s
    assert _search(db, notebook_id, files) == expected
    assert _file(files, revision_id) is None


def test_posting_lists_naming_rows_beyond_the_file_count_as_damaged(db: Database, tmp_path: Path) -> None:
    files, notebook_id, revision_id, path = _written(db, tmp_path, "beyond")
    expected = _search(db, notebook_id, None)
    with sqlite3.connect(path) as connection:
        beyond = np.array([99_999], dtype=np.int32).tobytes()  # "safe" is in one row of the DMCA summary
        assert connection.execute("UPDATE postings SET rows = ? WHERE term = 'safe'", (beyond,)).rowcount == 1
    assert _search(db, notebook_id, files) == expected
    assert _file(files, revision_id) is None


class _Renamed(HashingEmbedder):
    """An embedder no chunk has vectors of yet: the moment after ``GNOSI_EMBEDDER`` changed."""

    name = "renamed-v1"


def test_a_pack_indexes_the_words_of_versions_without_vectors_of_its_embedder(db: Database, tmp_path: Path) -> None:
    files = VectorFiles(tmp_path / "vectors")
    notebook_id = stored_notebook(db, "switched", ("dmca.pdf",))
    renamed = _Renamed()
    with db.reader() as session:
        revision_id = session.get(Notebook, notebook_id).active_revision_id
        files.ensure(session, revision_id, renamed)
    assert files.lexical_packs(revision_id, renamed) is not None
    found = [_candidates(db, notebook_id, question, None, renamed) for question in QUESTIONS]
    assert sum(map(bool, found)) >= 2
    assert [_candidates(db, notebook_id, question, files, renamed) for question in QUESTIONS] == found


def test_a_refreshed_revisions_packs_rank_to_the_bit_as_one_file_of_its_rows(db: Database, tmp_path: Path) -> None:
    """After a refresh the revision reads its first pack, less the changed source's old rows, and a
    pack of the new ones: with statistics summed over the rows it serves, rows, order and scores are
    those of one file of exactly those rows, and the old rows never come back."""
    files = VectorFiles(tmp_path / "vectors")
    notebook_id = stored_notebook(db, "refreshed", ("dmca.pdf", "tracemonkey.pdf", "federal-register-2020-17221.pdf"))
    _ensure(db, notebook_id, files)
    refresh(db, notebook_id, {"federal-register-2020-17221.pdf": "GeoTopo-komprimiert.pdf"})
    revision_id = _ensure(db, notebook_id, files)
    packs = files.lexical_packs(revision_id, EMBEDDER)
    assert packs is not None and [len(pack.unserved) for pack in packs] == [1, 0]
    whole = VectorFiles(tmp_path / "whole")  # no earlier packs to share: one pack of the revision's rows
    _ensure(db, notebook_id, whole)
    assert _file(whole, revision_id) is not None
    questions = (*QUESTIONS, "Federal Register notice of the Department", "Geotopologie Komprimierung", "trace tree")
    for question in questions:
        by_packs = _candidates(db, notebook_id, question, files)
        assert by_packs == _candidates(db, notebook_id, question, whole), question
    with db.reader() as session:
        resources = {session.get(Chunk, pk).resource_id for question in questions
                     for pk, _ in _candidates(db, notebook_id, question, files)}
        old = {pk for pk, in session.execute(select(Chunk.id).where(Chunk.revision_id != revision_id,
                                                                   Chunk.resource_id == "federal-register-2020-17221.pdf"))}
    assert "federal-register-2020-17221.pdf" in resources  # the new content, under the same resource
    assert old and not old & {pk for question in questions for pk, _ in _candidates(db, notebook_id, question, files)}
