"""A chat turn takes SQLite's write lock only to write. While one process holds it, a writer of
another web process waits in SQLite's busy handler, which sleeps in C and so stops every request
of that process: a lock taken to read lengthens the first-event tail of everyone (issue #13)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

from support_api import ask, create_notebook, index, services_of

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@contextmanager
def _write_transactions(engine) -> Iterator[list[list[str]]]:  # type: ignore[no-untyped-def]
    """The statements of each ``BEGIN IMMEDIATE`` transaction run meanwhile, one list each."""
    transactions: list[list[str]] = []
    open_ones: dict[int, list[str]] = {}

    def before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
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


def test_every_write_transaction_of_a_turn_writes(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = create_notebook(world, ["dmca"])
    index(world, notebook_id)
    ask(world, notebook_id, "Which president signed the DMCA into law?")  # the first turn makes the thread

    with _write_transactions(services_of(world).db.engine) as transactions:
        done = ask(world, notebook_id, "Into how many titles is the DMCA divided?")

    assert done["status"] == "answered"
    assert len(transactions) >= 3, "counting the turn, storing the question and storing the answer"
    for statements in transactions:
        assert any(statement.lstrip().upper().startswith(WRITES) for statement in statements), statements
