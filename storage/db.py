"""Engine and session factory for the instance-local SQLite database.

WAL lets the web process read while a coordinator task writes; ``busy_timeout`` makes concurrent
writers wait instead of failing; foreign keys are off by default in SQLite and must be switched on
for every connection.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session

BUSY_TIMEOUT_MS = 30_000


def make_engine(database_path: Path) -> Engine:
    database_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        f"sqlite:///{database_path}",
        connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        # The stdlib driver opens transactions lazily and its own way; let SQLAlchemy's
        # "begin" event issue BEGIN so that write transactions take the lock up front.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        # Writers take the write lock at BEGIN so they queue on busy_timeout; a deferred
        # transaction that upgrades later can fail at once with SQLITE_BUSY_SNAPSHOT in WAL.
        immediate = conn.get_execution_options().get("immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """One engine and session factory per process, created lazily from a path."""

    def __init__(self, database_path: Path) -> None:
        self.path = database_path
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(self.path)
        return self._engine

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A write unit of work: committed on success, rolled back on any exception."""
        bind = self.engine.execution_options(immediate=True)
        with Session(bind=bind, expire_on_commit=False) as session, session.begin():
            yield session

    @contextmanager
    def reader(self) -> Iterator[Session]:
        """A read-only snapshot that never blocks writers; closing it rolls back."""
        with Session(bind=self.engine, expire_on_commit=False) as session:
            yield session

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
