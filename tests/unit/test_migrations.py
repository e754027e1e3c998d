"""The Alembic migrations create exactly the schema the models describe, and can be undone."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from storage.db import make_engine
from storage.migrate import MIGRATIONS, upgrade
from storage.models import Base


def _include(obj, name, type_, reflected, compare_to) -> bool:  # type: ignore[no-untyped-def]
    return not (type_ == "table" and "fts" in (name or ""))


def test_migrations_match_the_models_and_enable_wal(tmp_path: Path) -> None:
    database = tmp_path / "n.sqlite3"
    upgrade(database)
    engine = make_engine(database)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": _include})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"chunks_fts", "chunks", "chunk_vectors", "jobs", "revisions", "audit_outcomes"} <= tables


def _downgrade(database: Path, target: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = make_engine(database)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, target)
    engine.dispose()


def test_downgrade_to_base_removes_everything(tmp_path: Path) -> None:
    database = tmp_path / "n.sqlite3"
    upgrade(database)
    _downgrade(database, "base")
    with sqlite3.connect(database) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names <= {"alembic_version"}


def _one_chunk_at_0004(database: Path) -> None:
    upgrade(database, "0004")
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(
            "INSERT INTO sources (id, vault_hash, workspace_id, notebook_id, revision_id, resource_id, field, kind,"
            " value, state, title, pages_needing_ocr) VALUES ('s1', 'v', 'w', 'n', 'r', 'res', 'file', 'attachment',"
            " 'files/ADOBE_2022_10K.pdf', 'available', 'Form 10-K', '[]')"
        )
        conn.execute(
            "INSERT INTO chunks (vault_hash, workspace_id, chunk_id, notebook_id, revision_id, source_id,"
            " resource_id, ordinal, text, locator) VALUES ('v', 'w', 'c1', 'n', 'r', 's1', 'res', 0,"
            " 'Operating income rose.', '{\"page\": 3}')"
        )
        conn.execute("INSERT INTO chunk_vectors (chunk_pk, embedder, vector) VALUES (1, 'hashing-v1', x'00')")


def test_chunk_context_is_backfilled_and_searchable(tmp_path: Path) -> None:
    """0005 gives existing chunks their source's declared title, indexed beside the text."""
    database = tmp_path / "n.sqlite3"
    _one_chunk_at_0004(database)
    upgrade(database)
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT context FROM chunks").fetchone()[0] == "Form 10-K"
        assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'form'").fetchall() == [(1,)]
        assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'operating'").fetchall() == [(1,)]


def test_undoing_0005_keeps_every_chunk_and_vector(tmp_path: Path) -> None:
    database = tmp_path / "n.sqlite3"
    _one_chunk_at_0004(database)
    upgrade(database)
    _downgrade(database, "0004")
    with sqlite3.connect(database) as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                  for table in ("sources", "chunks", "chunk_vectors")]
        assert counts == [1, 1, 1]
        assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'operating'").fetchall() == [(1,)]
        assert "context" not in {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}


def test_0009_restricts_matches_to_a_revision_and_can_be_undone(tmp_path: Path) -> None:
    """The full-text index gains the revision column without losing a row; undoing it keeps search."""
    database = tmp_path / "n.sqlite3"
    _one_chunk_at_0004(database)
    upgrade(database, "0008")
    upgrade(database)
    restricted = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?"
    with sqlite3.connect(database) as conn:
        assert conn.execute(restricted, ['revision_id : "r" AND {context text} : (operating)']).fetchall() == [(1,)]
        assert conn.execute(restricted, ['revision_id : "other" AND {context text} : (operating)']).fetchall() == []
    _downgrade(database, "0008")
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'operating'").fetchall() == [(1,)]
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 1
