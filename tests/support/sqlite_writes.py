"""Which write transactions (``BEGIN IMMEDIATE``) a piece of code takes, and what each one runs.

While one process holds SQLite's write lock, a writer of another waits in SQLite's busy handler,
which sleeps in C and so stops a whole gevent web process: tests use this to check that code
takes the lock only to write, and only for as long as its writes need."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, event

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@contextmanager
def write_transactions(engine: Engine) -> Iterator[list[list[str]]]:
    """The statements of each ``BEGIN IMMEDIATE`` transaction the calling thread runs meanwhile, one
    list each (a worker thread of the same process may write at the same time)."""
    transactions: list[list[str]] = []
    open_ones: dict[int, list[str]] = {}
    caller = threading.get_ident()

    def before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if threading.get_ident() != caller:
            return
        if statement.startswith("BEGIN IMMEDIATE"):
            open_ones[id(conn.connection)] = []
            transactions.append(open_ones[id(conn.connection)])
        elif id(conn.connection) in open_ones:
            open_ones[id(conn.connection)].append(statement)

    def ended(conn) -> None:  # type: ignore[no-untyped-def]
        open_ones.pop(id(conn.connection), None)

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "commit", ended)
    event.listen(engine, "rollback", ended)
    try:
        yield transactions
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "commit", ended)
        event.remove(engine, "rollback", ended)
