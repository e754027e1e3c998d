"""Revisions' vectors kept as memory-mapped files (storage.vector_files): built from the rows once,
then mapped by any process without reading a row; deleted with their revision, or some minutes
after another revision replaced it as active."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from storage import notebooks
from storage.db import Database
from storage.models import Notebook, Revision
from storage.vector_cache import load_matrix
from storage.vector_files import REPLACED_GRACE, VectorFiles
from support.statements import recorded_statements
from support.stored_notebooks import EMBEDDER, refresh_changing_nothing, stored_notebook


def _revision(db: Database, notebook_id: str) -> str:
    with db.reader() as session:
        notebook = session.get(Notebook, notebook_id)
        assert notebook is not None and notebook.active_revision_id is not None
        return notebook.active_revision_id


def test_after_a_restart_the_matrix_is_mapped_from_its_files_without_reading_a_row(
    db: Database, tmp_path: Path
) -> None:
    revision_id = _revision(db, stored_notebook(db, "a", ("dmca.pdf", "tracemonkey.pdf")))
    with db.reader() as session:
        built = VectorFiles(tmp_path / "vectors").load(session, revision_id, EMBEDDER)
        from_rows = load_matrix(session, revision_id, EMBEDDER)
    with db.reader() as session, recorded_statements(session) as statements:  # a new process: nothing in memory
        mapped = VectorFiles(tmp_path / "vectors").load(session, revision_id, EMBEDDER)
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
        (files.folder(revision_id, EMBEDDER) / "vectors.npy").write_bytes(b"torn")
        rebuilt = files.load(session, revision_id, EMBEDDER)
        assert np.array_equal(rebuilt.vectors, load_matrix(session, revision_id, EMBEDDER).vectors)
        assert isinstance(files.load(session, revision_id, EMBEDDER).vectors, np.memmap)


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
        assert files.lexical_file(replaced, EMBEDDER) is not None
        assert files.delete_unreferenced(session, activated + REPLACED_GRACE + timedelta(seconds=1)) == 1
        assert not files.folder(replaced, EMBEDDER).exists() and files.lexical_file(active, EMBEDDER) is not None
        late = files.load(session, replaced, EMBEDDER)
        assert np.array_equal(late.vectors, load_matrix(session, replaced, EMBEDDER).vectors)


def test_a_folder_name_cannot_leave_the_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        VectorFiles(tmp_path).folder("../escape", EMBEDDER)
    assert VectorFiles(tmp_path).folder("abc", EMBEDDER).parent == tmp_path

