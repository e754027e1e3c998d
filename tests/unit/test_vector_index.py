"""A big pack's approximate vector index (storage.vector_index): built by ``ensure`` above the
size threshold only, mapped by every later load, proposing rows that are then scored exactly; a
removed resource's rows never come back, and an unreadable index is dropped, then rebuilt.

The threshold is lowered so that real corpus PDFs (a few hundred chunks) get an index; at that
size the graph search finds the exact neighbours, so results must equal exact search's.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sqlalchemy.orm import Session

from storage import notebooks, vector_index, vector_packs
from storage.db import Database
from storage.models import Notebook
from storage.retrieval import vector_ranking
from storage.vector_cache import VectorCache, VectorMatrix, load_matrix
from storage.vector_files import VectorFiles
from support.statements import recorded_statements
from support.stored_notebooks import EMBEDDER, stored_notebook

QUESTIONS = (
    "What does the DMCA say about circumvention of technological measures?",
    "How does TraceMonkey record traces of hot loops?",
    "type specialization of JavaScript values",
    "vessel hull design protection term",
)


def _notebook(db: Database) -> tuple[str, str]:
    notebook_id = stored_notebook(db, "reader", ("dmca.pdf", "tracemonkey.pdf"))
    with db.reader() as session:
        return notebook_id, session.get(Notebook, notebook_id).active_revision_id


def _pack(files: VectorFiles, revision_id: str) -> Path:
    (pack,) = files.pack_folders(revision_id, EMBEDDER)
    return pack


def _loaded(files: VectorFiles, session: Session, revision_id: str) -> VectorMatrix:
    (part,) = files.load(session, revision_id, EMBEDDER).parts
    return part.matrix


def _rankings(db: Database, notebook_id: str, files: VectorFiles, revision_id: str) -> list[list[int]]:
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        vectors = files.load(session, revision_id, EMBEDDER)
        members = set(notebooks.member_ids(session, notebook))
        return [vector_ranking(vectors, EMBEDDER.embed([q])[0], members) for q in QUESTIONS]


def test_only_a_revision_above_the_threshold_gets_an_index(db: Database, tmp_path: Path) -> None:
    notebook_id, revision_id = _notebook(db)
    small, big = VectorFiles(tmp_path / "small", index_min_chunks=10**6), VectorFiles(tmp_path / "big", index_min_chunks=1)
    with db.reader() as session:
        for files in (small, big):
            files.ensure(session, revision_id, EMBEDDER)
    assert not (_pack(small, revision_id) / vector_index.FILE).exists()
    assert (_pack(big, revision_id) / vector_index.FILE).is_file()
    with db.reader() as session:
        assert _loaded(small, session, revision_id).index is None
        indexed = _loaded(big, session, revision_id)
    assert indexed.index is not None and len(indexed.index) == len(indexed.pks)


def test_the_index_finds_what_exact_search_finds(db: Database, tmp_path: Path) -> None:
    notebook_id, revision_id = _notebook(db)
    exact, approximate = VectorFiles(tmp_path / "exact", index_min_chunks=10**6), VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        approximate.ensure(session, revision_id, EMBEDDER)
    expected = _rankings(db, notebook_id, exact, revision_id)
    assert all(len(ranking) >= 50 for ranking in expected), [len(ranking) for ranking in expected]
    assert _rankings(db, notebook_id, approximate, revision_id) == expected


def test_a_removed_resource_never_comes_back_through_the_index(db: Database, tmp_path: Path) -> None:
    notebook_id, revision_id = _notebook(db)
    files = VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
        rows = load_matrix(session, revision_id, EMBEDDER)
        removed = {int(pk) for pk, code in zip(rows.pks, rows.codes) if rows.resources[code] == "dmca.pdf"}
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebooks.remove_resource(session, notebook, "dmca.pdf")
    rankings = _rankings(db, notebook_id, files, revision_id)
    assert all(rankings) and not removed & {pk for ranking in rankings for pk in ranking}


def test_an_unreadable_index_is_dropped_and_the_arrays_searched_exactly_until_it_is_rebuilt(
    db: Database, tmp_path: Path
) -> None:
    """The arrays beside a torn index are sound: they are kept and mapped, not rebuilt from rows
    (~25 s at 1M chunks); the sweeper finds the revision wanting its index and has it built."""
    _, revision_id = _notebook(db)
    files = VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
        assert files.wanting(session, EMBEDDER) == []
        folder = _pack(files, revision_id)
        arrays_written = (folder / "vectors.npy").stat().st_mtime_ns
        (folder / vector_index.FILE).write_bytes(b"torn")
        with recorded_statements(session) as statements:
            served = _loaded(files, session, revision_id)
        assert statements == [] and (folder / "vectors.npy").stat().st_mtime_ns == arrays_written
        assert served.index is None and isinstance(served.vectors, np.memmap)
        assert np.array_equal(served.vectors, load_matrix(session, revision_id, EMBEDDER).vectors)
        assert not (folder / vector_index.FILE).exists()
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
        assert _loaded(files, session, revision_id).index is not None
        assert files.wanting(session, EMBEDDER) == []


def test_a_restored_revision_wants_its_files_unless_they_are_being_written(db: Database, tmp_path: Path) -> None:
    _, revision_id = _notebook(db)
    files = VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]  # a restore brings rows, not files
        (files.packs / f"{vector_packs.writing('another')}0123").mkdir(parents=True)
        assert files.wanting(session, EMBEDDER) == [revision_id]  # another revision's write
        (files.packs / f"{vector_packs.writing(revision_id)}4567").mkdir()  # its own pack being written
        assert files.wanting(session, EMBEDDER) == []
        small = VectorFiles(tmp_path / "small", index_min_chunks=10**6)
        small.ensure(session, revision_id, EMBEDDER)
        assert small.wanting(session, EMBEDDER) == []  # too small to want an index


def test_an_indexed_matrix_weighs_its_index_not_its_float32_rows(db: Database, tmp_path: Path) -> None:
    _, revision_id = _notebook(db)
    files = VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
        matrix = _loaded(files, session, revision_id)
        cache = VectorCache(matrix.nbytes, loader=files.load)
        cache.get(session, revision_id, EMBEDDER)
    index_file = _pack(files, revision_id) / vector_index.FILE
    assert matrix.versions is not None
    assert matrix.nbytes == matrix.pks.nbytes + matrix.codes.nbytes + matrix.versions.nbytes + index_file.stat().st_size
    assert matrix.nbytes < matrix.vectors.nbytes and cache.cached_bytes == matrix.nbytes


def _resident_kib(address: int) -> int:
    """How much of the mapping that holds ``address`` is resident in this process."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and ":" not in fields[0]:
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            inside = start <= address < end
        elif inside and fields[0] == "Rss:":
            return int(fields[1])
    raise AssertionError("no mapping holds the address")


def test_rows_an_index_proposes_are_read_without_mapping_the_float32_file(db: Database, tmp_path: Path) -> None:
    """Read through the mapping, each proposed row's fault maps a whole large folio of the page
    cache into the process: 620 MB resident for 400 rows of a 1M-row file (bench/retrieval.py)."""
    notebook_id, revision_id = _notebook(db)
    files = VectorFiles(tmp_path / "ann", index_min_chunks=1)
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
        vectors = files.load(session, revision_id, EMBEDDER)
        (part,) = vectors.parts
        matrix = part.matrix
        members = set(notebooks.member_ids(session, session.get(Notebook, notebook_id)))
        exact = load_matrix(session, revision_id, EMBEDDER)
    assert matrix.index is not None and isinstance(matrix.vectors, np.memmap)
    for question in QUESTIONS:
        assert vector_ranking(vectors, EMBEDDER.embed([question])[0], members)
    positions = np.arange(0, len(matrix.pks), 7)
    assert np.array_equal(matrix.rows(positions), exact.vectors[positions])
    assert _resident_kib(matrix.vectors.ctypes.data) == 0

