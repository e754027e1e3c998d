"""Revisions' vectors kept as memory-mapped files (storage.vector_files): built from the rows once,
then mapped by any process without reading a row; shared, in packs (storage.vector_packs), by the
revisions that serve the same source versions; a revision's folder deleted with it, or some minutes
after another revision replaced it as active, and a pack once no folder names it."""
from __future__ import annotations

import errno
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from storage import lexical_index, notebooks, vector_packs
from storage.db import Database
from storage.models import Notebook, Revision
from storage.retrieval import vector_ranking
from storage.vector_cache import Part, RevisionVectors, VectorMatrix, load_matrix
from storage.vector_files import MANIFEST, REPLACED_GRACE, VectorFiles
from support.statements import recorded_statements
from support.stored_notebooks import EMBEDDER, refresh, refresh_changing_nothing, stored_notebook

QUESTIONS = (
    "What does the DMCA say about circumvention of technological measures?",
    "How does TraceMonkey record traces of hot loops?",
    "Who must register with the Federal Register notice?",
)


def _revision(db: Database, notebook_id: str) -> str:
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        return notebook.active_revision_id


def _only(vectors: RevisionVectors) -> VectorMatrix:
    """The one pack of a revision that serves all of it."""
    (part,) = vectors.parts
    assert part.served is None
    return part.matrix


def test_after_a_restart_the_matrix_is_mapped_from_its_files_without_reading_a_row(
    db: Database, tmp_path: Path
) -> None:
    revision_id = _revision(db, stored_notebook(db, "a", ("dmca.pdf", "tracemonkey.pdf")))
    with db.reader() as session:
        built = _only(VectorFiles(tmp_path / "vectors").load(session, revision_id, EMBEDDER))
        from_rows = load_matrix(session, revision_id, EMBEDDER)
    with db.reader() as session, recorded_statements(session) as statements:  # a new process: nothing in memory
        mapped = _only(VectorFiles(tmp_path / "vectors").load(session, revision_id, EMBEDDER))
    assert statements == []
    assert isinstance(mapped.vectors, np.memmap)
    for matrix in (built, mapped):
        assert matrix.resources == from_rows.resources == ["dmca.pdf", "tracemonkey.pdf"]
        assert np.array_equal(matrix.pks, from_rows.pks) and np.array_equal(matrix.codes, from_rows.codes)
        assert np.array_equal(matrix.vectors, from_rows.vectors) and len(matrix.pks) > 50


def test_unreadable_files_are_rebuilt_from_the_rows(db: Database, tmp_path: Path) -> None:
    revision_id = _revision(db, stored_notebook(db, "b", ("dmca.pdf",)))
    files = VectorFiles(tmp_path / "vectors")
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
        (torn,) = files.pack_folders(revision_id, EMBEDDER)
        (torn / "vectors.npy").write_bytes(b"torn")
        rebuilt = _only(files.load(session, revision_id, EMBEDDER))
        assert np.array_equal(rebuilt.vectors, load_matrix(session, revision_id, EMBEDDER).vectors)
        assert isinstance(_only(files.load(session, revision_id, EMBEDDER)).vectors, np.memmap)
        assert not torn.exists() and files.pack_folders(revision_id, EMBEDDER) != [torn]


def test_the_files_of_a_deleted_revision_go_and_the_others_stay(db: Database, tmp_path: Path) -> None:
    kept_id = _revision(db, stored_notebook(db, "c", ("dmca.pdf",)))
    gone_notebook = stored_notebook(db, "d", ("tracemonkey.pdf",))
    gone_id = _revision(db, gone_notebook)
    files = VectorFiles(tmp_path / "vectors")
    with db.reader() as session:
        for revision_id in (kept_id, gone_id):
            files.ensure(session, revision_id, EMBEDDER)
    with db.session() as session:
        notebook = session.get(Notebook, gone_notebook)
        notebooks.delete_notebook(session, notebook)
    with db.reader() as session:
        assert files.delete_unreferenced(session) == 1
    assert files.folder(kept_id, EMBEDDER).is_dir() and not files.folder(gone_id, EMBEDDER).exists()


def test_a_replaced_revisions_files_stay_for_the_grace_then_go_and_a_late_search_still_answers(
    db: Database, tmp_path: Path
) -> None:
    notebook_id = stored_notebook(db, "e", ("dmca.pdf",))
    replaced = _revision(db, notebook_id)
    files = VectorFiles(tmp_path / "vectors")
    with db.reader() as session:
        files.ensure(session, replaced, EMBEDDER)
    active = refresh_changing_nothing(db, notebook_id)
    with db.reader() as session:
        files.ensure(session, active, EMBEDDER)
        activated = session.get(Revision, active).completed_at
        assert files.delete_unreferenced(session, activated + REPLACED_GRACE) == 0
        assert files.lexical_packs(replaced, EMBEDDER) is not None
        assert files.delete_unreferenced(session, activated + REPLACED_GRACE + timedelta(seconds=1)) == 1
        assert not files.folder(replaced, EMBEDDER).exists() and files.lexical_packs(active, EMBEDDER) is not None
        late = _only(files.load(session, replaced, EMBEDDER))
        assert np.array_equal(late.vectors, load_matrix(session, replaced, EMBEDDER).vectors)


def test_a_folder_name_cannot_leave_the_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        VectorFiles(tmp_path).folder("../escape", EMBEDDER)
    assert VectorFiles(tmp_path).folder("abc", EMBEDDER).parent == tmp_path



def _ranked(db: Database, notebook_id: str, vectors: RevisionVectors) -> list[list[int]]:
    with db.reader() as session:
        members = set(notebooks.member_ids(session, session.get(Notebook, notebook_id)))
    return [vector_ranking(vectors, EMBEDDER.embed([question])[0], members) for question in QUESTIONS]


def _written(
    db: Database, tmp_path: Path, user: str, documents: tuple[str, ...] = ("dmca.pdf", "tracemonkey.pdf")
) -> tuple[str, str, VectorFiles]:
    """A notebook of ``documents``, its active revision, and the files the coordinator wrote for it."""
    notebook_id = stored_notebook(db, user, documents)
    revision_id = _revision(db, notebook_id)
    files = VectorFiles(tmp_path / "vectors")
    with db.reader() as session:
        files.ensure(session, revision_id, EMBEDDER)
    return notebook_id, revision_id, files


def test_a_refresh_that_changed_nothing_shares_the_pack_and_writes_none(db: Database, tmp_path: Path) -> None:
    notebook_id, first, files = _written(db, tmp_path, "g")
    second = refresh_changing_nothing(db, notebook_id)
    with db.reader() as session, recorded_statements(session) as statements:
        files.ensure(session, second, EMBEDDER)
        shared = _only(files.load(session, second, EMBEDDER))
    assert not [statement for statement in statements if "chunk_vectors" in statement]
    assert files.pack_folders(second, EMBEDDER) == files.pack_folders(first, EMBEDDER)
    assert len(list(files.packs.iterdir())) == 1
    with db.reader() as session:
        assert np.array_equal(shared.pks, load_matrix(session, second, EMBEDDER).pks)


def test_a_refresh_writes_a_pack_of_what_changed_and_no_longer_serves_the_old_version(
    db: Database, tmp_path: Path
) -> None:
    notebook_id, first, files = _written(db, tmp_path, "h", ("dmca.pdf", "tracemonkey.pdf", "federal-register-2020-17221.pdf"))
    with db.reader() as session:
        old_pks = set(load_matrix(session, first, EMBEDDER).pks.tolist())
    second = refresh(db, notebook_id, {"federal-register-2020-17221.pdf": "GeoTopo-komprimiert.pdf"})
    with db.reader() as session:
        files.ensure(session, second, EMBEDDER)
        vectors = files.load(session, second, EMBEDDER)
        expected = load_matrix(session, second, EMBEDDER)
    kept, written = vectors.parts
    assert files.pack_folders(second, EMBEDDER)[0] == files.pack_folders(first, EMBEDDER)[0]
    assert written.served is None and set(written.matrix.pks.tolist()).isdisjoint(old_pks)
    assert kept.served is not None and 0 < kept.served.sum() < len(kept.matrix.pks)
    served = set(kept.matrix.pks[kept.served].tolist()) | set(written.matrix.pks.tolist())
    assert served == set(expected.pks.tolist()) and vectors.rows == len(expected.pks)
    whole = RevisionVectors((Part(expected),))
    assert _ranked(db, notebook_id, vectors) == _ranked(db, notebook_id, whole)
    unserved = set(kept.matrix.pks[~kept.served].tolist())
    assert unserved and not unserved & {pk for ranking in _ranked(db, notebook_id, vectors) for pk in ranking}


def test_a_pack_goes_only_when_no_kept_revision_names_it(db: Database, tmp_path: Path) -> None:
    notebook_id, first, files = _written(db, tmp_path, "i")
    (pack,) = files.pack_folders(first, EMBEDDER)
    second = refresh_changing_nothing(db, notebook_id)
    with db.reader() as session:
        files.ensure(session, second, EMBEDDER)
        an_hour_ago = time.time() - 3600  # since the second revision named it
        os.utime(pack, (an_hour_ago, an_hour_ago))
        activated = session.get(Revision, second).completed_at
        assert files.delete_unreferenced(session, activated + REPLACED_GRACE + timedelta(seconds=1)) == 1
    assert not files.folder(first, EMBEDDER).exists() and pack.is_dir()  # the active revision names it
    with db.session() as session:
        notebooks.delete_notebook(session, session.get(Notebook, notebook_id))
    with db.reader() as session:
        assert files.delete_unreferenced(session) == 2
    assert not pack.exists() and list(files.packs.iterdir()) == []


def test_a_pack_just_written_stays_until_its_revision_names_it(db: Database, tmp_path: Path) -> None:
    files = VectorFiles(tmp_path / "vectors")
    files.packs.mkdir(parents=True)
    (files.packs / "0123abcd").mkdir()
    with db.reader() as session:
        assert files.delete_unreferenced(session) == 0
    assert (files.packs / "0123abcd").is_dir()


def test_a_folder_of_the_previous_layout_is_written_again_as_packs(db: Database, tmp_path: Path) -> None:
    """Before packs a revision's folder held its own arrays; the sweeper finds it wanting, and the
    coordinator names packs there and deletes the arrays."""
    _, revision_id, files = _written(db, tmp_path, "j")
    folder = files.folder(revision_id, EMBEDDER)
    (folder / MANIFEST).unlink()
    for name in ("pks.npy", "codes.npy", "vectors.npy", "resources.json", "lexical-2.sqlite3"):
        (folder / name).write_bytes(b"the previous layout")
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
        assert files.wanting(session, EMBEDDER) == []
        assert [entry.name for entry in folder.iterdir()] == [MANIFEST]
        assert files.lexical_packs(revision_id, EMBEDDER) is not None
        assert np.array_equal(_only(files.load(session, revision_id, EMBEDDER)).pks,
                              load_matrix(session, revision_id, EMBEDDER).pks)


def test_a_passing_failure_to_read_a_shared_pack_serves_rows_and_leaves_the_pack(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process out of file handles cannot map a sound pack: that search reads rows, and the pack
    that another revision names too stays, with its full-text index."""
    notebook_id, first, files = _written(db, tmp_path, "k")
    second = refresh_changing_nothing(db, notebook_id)

    def out_of_handles(folder: Path) -> VectorMatrix:
        raise OSError(errno.EMFILE, "Too many open files")

    with db.reader() as session:
        files.ensure(session, second, EMBEDDER)
        (pack,) = files.pack_folders(first, EMBEDDER)
        with monkeypatch.context() as patched:
            patched.setattr(vector_packs, "read", out_of_handles)
            from_rows = _only(files.load(session, second, EMBEDDER))
        assert np.array_equal(from_rows.pks, load_matrix(session, second, EMBEDDER).pks)
    assert pack.is_dir() and files.pack_folders(second, EMBEDDER) == [pack]
    assert files.lexical_packs(first, EMBEDDER) is not None


# How a pack is torn: cut short by a crash, emptied (a power loss kept the name, not the bytes),
# or missing one of its files.
TEARS = {
    "cut short": lambda pack: (pack / "pks.npy").write_bytes(b"torn"),
    "emptied": lambda pack: (pack / "pks.npy").write_bytes(b""),
    "a file missing": lambda pack: (pack / "vectors.npy").unlink(),
}


@pytest.mark.parametrize("tear", TEARS)
def test_a_damaged_pack_is_set_aside_and_every_revision_naming_it_names_another(
    db: Database, tmp_path: Path, tear: str
) -> None:
    notebook_id, first, files = _written(db, tmp_path, "l")
    second = refresh_changing_nothing(db, notebook_id)
    with db.reader() as session:
        files.ensure(session, second, EMBEDDER)
        (torn,) = files.pack_folders(second, EMBEDDER)
        TEARS[tear](torn)
        assert files.wanting(session, EMBEDDER) == []  # nothing tells until a search or a write reads it
        assert np.array_equal(_only(files.load(session, second, EMBEDDER)).pks, load_matrix(session, second, EMBEDDER).pks)
        assert not torn.exists() and files.pack_folders(second, EMBEDDER) != [torn]
        assert files.wanting(session, EMBEDDER) == [second]  # the new pack's full-text index is the coordinator's
        files.ensure(session, second, EMBEDDER)
        assert files.lexical_packs(first, EMBEDDER) is None  # its folder names the pack set aside
        files.ensure(session, first, EMBEDDER)
        assert files.lexical_packs(first, EMBEDDER) is not None
        assert files.pack_folders(first, EMBEDDER) == files.pack_folders(second, EMBEDDER)


def test_the_coordinator_sets_aside_a_damaged_pack_it_was_to_index(db: Database, tmp_path: Path) -> None:
    """A pack torn before its full-text index was written: the write sets it aside and indexes a
    new pack of the same rows, instead of failing at every sweep."""
    _, revision_id, files = _written(db, tmp_path, "o")
    (pack,) = files.pack_folders(revision_id, EMBEDDER)
    (pack / lexical_index.FILE).unlink()
    (pack / "versions.npy").write_bytes(b"")
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
        assert files.wanting(session, EMBEDDER) == []
        assert files.pack_folders(revision_id, EMBEDDER) != [pack] and not pack.exists()
        assert np.array_equal(_only(files.load(session, revision_id, EMBEDDER)).pks,
                              load_matrix(session, revision_id, EMBEDDER).pks)
    assert files.lexical_packs(revision_id, EMBEDDER) is not None


def test_an_active_revision_whose_folder_names_a_missing_pack_is_wanted_and_written_again(
    db: Database, tmp_path: Path
) -> None:
    _, revision_id, files = _written(db, tmp_path, "m")
    (pack,) = files.pack_folders(revision_id, EMBEDDER)
    shutil.rmtree(pack)
    with db.reader() as session:
        assert files.wanting(session, EMBEDDER) == [revision_id]
        files.ensure(session, revision_id, EMBEDDER)
        assert files.wanting(session, EMBEDDER) == []
    assert files.lexical_packs(revision_id, EMBEDDER) is not None


def test_partial_writes_are_deleted_once_abandoned_wherever_they_are(db: Database, tmp_path: Path) -> None:
    """A crashed write leaves a partial file in a pack (a full-text index: ~1 GB at 1M chunks),
    in a revision's folder, or a partial pack: each goes once it is an hour old, and only then."""
    _, revision_id, files = _written(db, tmp_path, "n")
    (pack,) = files.pack_folders(revision_id, EMBEDDER)
    partials = [pack / ".tmp-index", files.folder(revision_id, EMBEDDER) / ".tmp-manifest",
                files.packs / f"{vector_packs.writing(revision_id)}pack"]
    for partial in partials:
        partial.write_bytes(b"partial")
    with db.reader() as session:
        assert files.delete_unreferenced(session) == 0
        assert files.wanting(session, EMBEDDER) == []
        two_hours_ago = time.time() - 7200
        for partial in partials:
            os.utime(partial, (two_hours_ago, two_hours_ago))
        assert files.delete_unreferenced(session) == 3
    assert not any(partial.exists() for partial in partials)
    assert pack.is_dir() and files.lexical_packs(revision_id, EMBEDDER) is not None
