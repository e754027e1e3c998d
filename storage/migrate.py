"""Run Alembic migrations from code, so `gnosi db upgrade` works from any directory."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from storage.db import make_engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "alembic"


def upgrade(database_path: Path, target: str = "head") -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = make_engine(database_path)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, target)
    finally:
        engine.dispose()
