"""A chat turn takes SQLite's write lock only to write. While one process holds it, a writer of
another web process waits in SQLite's busy handler, which sleeps in C and so stops every request
of that process: a lock taken to read lengthens the first-event tail of everyone (issue #13)."""
from __future__ import annotations

from support.sqlite_writes import WRITES, write_transactions
from support_api import ask, create_notebook, index, services_of


def test_every_write_transaction_of_a_turn_writes(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = create_notebook(world, ["dmca"])
    index(world, notebook_id)
    ask(world, notebook_id, "Which president signed the DMCA into law?")  # the first turn makes the thread

    with write_transactions(services_of(world).db.engine) as transactions:
        done = ask(world, notebook_id, "Into how many titles is the DMCA divided?")

    assert done["status"] == "answered"
    assert len(transactions) >= 3, "counting the turn, storing the question and storing the answer"
    for statements in transactions:  # reads (the thread, the history, the search) run before, in readers
        assert statements and all(statement.lstrip().upper().startswith(WRITES) for statement in statements), statements
