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


def test_downgrade_to_base_removes_everything(tmp_path: Path) -> None:
    database = tmp_path / "n.sqlite3"
    upgrade(database)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = make_engine(database)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
    engine.dispose()
    with sqlite3.connect(database) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names <= {"alembic_version"}
