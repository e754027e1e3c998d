"""Run Alembic migrations from code, so `gnosi db upgrade` works from any directory, and say
which schema revision a database is at (backups record it, restores check it)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from storage.db import make_engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "alembic"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(database_path: Path, target: str = "head") -> None:
    config = _config()
    engine = make_engine(database_path)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, target)
    finally:
        engine.dispose()


def head() -> str:
    """The schema revision this code's migrations end at."""
    revision = ScriptDirectory.from_config(_config()).get_current_head()
    assert revision is not None
    return revision


def known_revisions() -> list[str]:
    """Every schema revision this code can upgrade from, oldest first."""
    return [script.revision for script in reversed(list(ScriptDirectory.from_config(_config()).walk_revisions()))]


def current_revision(database_path: Path) -> str | None:
    """The schema revision of the database at ``database_path`` (None: never migrated)."""
    with sqlite3.connect(f"file:{database_path}?mode=ro", uri=True) as connection:
        table = connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone() if table else None
    return row[0] if row else None
