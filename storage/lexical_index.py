"""A revision's own full-text index: an FTS5 file beside its vector files.

The main ``chunks_fts`` table holds every notebook's rows, so bm25 takes its statistics (how many
rows hold a word, the average row length) from the whole instance, and a phrase's position lists
are read instance-wide. A 10k-chunk notebook searched 2.9× slower inside an instance that also
held 1M chunks, and another notebook's rows could reorder its near-equal hits. Once a revision is
active, the coordinator writes the rows it serves into ``lexical-2.sqlite3`` in the revision's folder
(storage.vector_files): the same tokenizer and columns as ``chunks_fts``, contentless (the text
stays in the database), so a search there ranks exactly as the notebook would rank alone in its
instance. Until the file exists (the seconds after activation, or after a restore) searches use
the main table. The file is derived data like the vector files: written beside and renamed into
place, never changed, deleted with its revision's folder, left out of backups.

The file also holds the rows' posting lists, from which words are ranked by numpy instead of by
FTS5's per-row callback, with the same scores (storage.bm25); FTS5 still finds phrases. Its rows
are numbered ``0..n-1`` in the order of their chunk ids, so a row's number is its position in the
score array and ties still go to the lower chunk id, as FTS5's ``ORDER BY score, rowid`` did.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import numpy as np
from sqlalchemy.orm import Session

from pipeline.fts_query import as_match
from storage import bm25, fts_tokens, top_k
from storage.evidence import COLUMN_WEIGHTS, Candidate, best_of_members, within_columns

# The file's layout, also in its name, so that a process of another version never reads it as its
# own (format 1 kept chunk ids as rowids; an older process would read positions as chunk ids). A
# file whose ``PRAGMA user_version`` says otherwise is treated as damaged and written again.
FORMAT = 2
FILE = f"lexical-{FORMAT}.sqlite3"
# Every format's name: format 1 was ``lexical.sqlite3``.
_ANY_FORMAT = "lexical*.sqlite3"
_DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CANTOPEN"})
# chunks_fts's tokenizer (alembic 0009): both indexes must agree on what a word is.
TOKENIZER = "porter unicode61 remove_diacritics 2"
# bm25's column weights, whole numbers since the posting lists store weighted hits exactly (a
# fractional weight would change the scores, which the tests compare with the main table's).
WEIGHTS = {"revision_id": 0, **{name: int(weight) for name, weight in zip(("context", "text"), COLUMN_WEIGHTS)}}

# ``revision_id`` is indexed (weight 0 in bm25) as in chunks_fts, where it is what scopes a search:
# FTS5 counts every column's words in a row's length, so without it the lengths, and so the scores,
# would differ from the main table's and a revision's results would change when its file appears.
_SCHEMA = (
    f"CREATE VIRTUAL TABLE fts USING fts5(revision_id, context, text, content='', tokenize='{TOKENIZER}');"
    "CREATE TABLE rows (position INTEGER PRIMARY KEY, pk INTEGER NOT NULL, resource_id TEXT NOT NULL);"
)
_SERVED_ROWS = """
    SELECT c.id, c.resource_id FROM served.chunks c
    JOIN served.sources s ON s.chunks_revision_id = c.revision_id AND s.chunks_source_id = c.source_id
    WHERE s.revision_id = ?
"""
_PHRASE = f"SELECT rowid, bm25(fts, {', '.join(f'{w:.1f}' for w in WEIGHTS.values())}) FROM fts WHERE fts MATCH ?"
_ROWS = "SELECT position, pk, resource_id FROM rows WHERE position IN (SELECT value FROM json_each(?))"


def older_files(folder: Path) -> list[Path]:
    """Files of other formats in a revision's folder, which no process of this version reads."""
    return [path for path in folder.glob(_ANY_FORMAT) if path.name != FILE]


class OtherFormat(sqlite3.DatabaseError):
    """The file was written by another version of this module, or its lists cannot be read: it is
    written again."""


def write(session: Session, revision_id: str, path: Path) -> int:
    """Write the index of the rows ``revision_id`` serves to ``path`` (a new file); their count.

    The rows are copied inside SQLite (the database attached), not through Python; per 100k chunks
    FTS5 takes 5-8 s to tokenise them and the posting lists take about as long again.
    """
    database = session.get_bind().url.database
    connection = sqlite3.connect(path)
    try:
        connection.executescript(f"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; {_SCHEMA}")
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("ATTACH DATABASE ? AS served", (database,))
        with connection:
            connection.execute("INSERT INTO rows (position, pk, resource_id) "
                               f"SELECT row_number() OVER (ORDER BY id) - 1, id, resource_id FROM ({_SERVED_ROWS})",
                               (revision_id,))
            connection.execute("INSERT INTO fts (rowid, revision_id, context, text) "
                               "SELECT r.position, c.revision_id, c.context, c.text "
                               "FROM rows r JOIN served.chunks c ON c.id = r.pk ORDER BY r.position")
            count = connection.execute("SELECT count(*) FROM rows").fetchone()[0]
        connection.execute("DETACH DATABASE served")
        connection.execute("INSERT INTO fts(fts) VALUES ('optimize')")  # one segment: fewer reads per word
        with connection:
            bm25.write_postings(connection, "fts", WEIGHTS, int(count))
            connection.execute(f"PRAGMA user_version = {FORMAT}")
        return int(count)
    finally:
        connection.close()


def unreadable(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` says the file itself is damaged or not an index (so it should be written
    again), rather than that one query failed."""
    return (
        isinstance(error, OtherFormat)
        or getattr(error, "sqlite_errorname", None) in _DAMAGED
        or "no such table" in str(error)
    )


def candidates(path: Path, terms: list[str], limit: int, is_member: Callable[[str], bool]) -> list[Candidate]:
    """The ``limit`` best rows of current members for the OR of ``terms`` (pipeline.fts_query) in
    the file at ``path``, best first, scored as FTS5's bm25 scores them (``sqlite3.DatabaseError``
    when it cannot be read)."""
    connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)
    try:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version != FORMAT:
            raise OtherFormat(f"{path.name} is of format {version}, not {FORMAT}")
        try:
            scores = _scores(connection, terms)
        except (ValueError, TypeError, IndexError, KeyError) as err:  # lists SQLite found sound but are not
            raise OtherFormat(f"{path.name} holds damaged posting lists: {err!r}") from err
        matching = np.flatnonzero(scores)

        def best(depth: int) -> list[tuple[int, float, bool]]:
            positions = matching[top_k.best(scores[matching], depth)]
            found = {position: (pk, resource_id) for position, pk, resource_id
                     in connection.execute(_ROWS, (json.dumps(positions.tolist()),))}
            return [(found[p][0], -float(scores[p]), is_member(found[p][1])) for p in positions.tolist()]

        return best_of_members(best, limit)
    finally:
        connection.close()


def _scores(connection: sqlite3.Connection, terms: list[str]) -> np.ndarray:
    """Every row's bm25 for the OR of ``terms``, as a positive number (FTS5's, negated), 0 where
    none matches: a term of one word from the posting lists, a phrase from FTS5's own bm25 of it
    alone, which is exactly its share of the whole query's. Terms are added in order, as FTS5
    adds them."""
    norms = bm25.row_norms(connection)
    scores = np.zeros(len(norms))
    for term, tokens in zip(terms, fts_tokens.tokens(terms, TOKENIZER), strict=True):
        if len(tokens) == 1:
            bm25.add_term(scores, norms, connection, tokens[0])
        elif tokens:
            found = connection.execute(_PHRASE, (within_columns(as_match([term])),)).fetchall()
            if found:
                rows, shares = np.array(found).T
                scores[rows.astype(np.int64)] -= shares
    return scores
