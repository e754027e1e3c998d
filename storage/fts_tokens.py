"""What FTS5 makes of a query's terms, asked of FTS5 itself.

The posting lists of a pack's full-text index (storage.lexical_index) are keyed by FTS5's tokens:
stemmed, case- and accent-folded, split where its tokenizer splits. A term is looked up there only
as FTS5 would read it, so it is tokenized by the same tokenizer, on a table in memory, rather than
by a copy of its rules in Python that could drift from them.
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

_lock = threading.Lock()  # one table per tokenizer and process; a query holds it well under 1 ms
_tables: dict[str, sqlite3.Connection] = {}


def tokens(terms: Sequence[str], tokenizer: str) -> list[list[str]]:
    """Each term's tokens, in order, as FTS5 with ``tokenizer`` reads the term."""
    found: list[list[str]] = [[] for _ in terms]
    with _lock:
        connection = _tables.get(tokenizer) or _table(tokenizer)
        try:
            connection.executemany("INSERT INTO terms(rowid, term) VALUES (?, ?)", enumerate(terms))
            for position, token in connection.execute("SELECT doc, term FROM term_tokens ORDER BY doc, offset"):
                found[position].append(token)
        finally:  # a term that cannot be stored must not leave the others behind for the next call
            connection.execute("DELETE FROM terms")
    return found


def _table(tokenizer: str) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    quoted = tokenizer.replace("'", "''")
    connection.execute(f"CREATE VIRTUAL TABLE terms USING fts5(term, tokenize='{quoted}')")
    connection.execute("CREATE VIRTUAL TABLE term_tokens USING fts5vocab(terms, instance)")
    _tables[tokenizer] = connection
    return connection
