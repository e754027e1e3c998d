"""Alembic environment: migrations are the only way the schema changes."""
from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.config import Settings
from storage.db import make_engine
from storage.models import Base

FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_docsize", "_config", "_content")


def include_object(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
    """Hide FTS5 tables and their shadow tables from autogenerate, which would drop them."""
    if type_ == "table" and name.startswith("chunks_fts"):
        return False
    return not (type_ == "table" and name.endswith(FTS_SHADOW_SUFFIXES) and "fts" in name)


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


config = context.config
connection = config.attributes.get("connection")
if connection is not None:
    run_with(connection)
else:
    engine = make_engine(Settings.from_env().database_path)
    with engine.connect() as conn:
        run_with(conn)
    engine.dispose()
