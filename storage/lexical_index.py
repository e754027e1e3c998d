"""A revision's own full-text index: an FTS5 file beside its vector files.

The main ``chunks_fts`` table holds every notebook's rows, so bm25 takes its statistics (how many
rows hold a word, the average row length) from the whole instance, and a phrase's position lists
are read instance-wide. A 10k-chunk notebook searched 2.9× slower inside an instance that also
held 1M chunks, and another notebook's rows could reorder its near-equal hits. Once a revision is
active, the coordinator writes the rows it serves into ``lexical.sqlite3`` in the revision's folder
(storage.vector_files): the same tokenizer and columns as ``chunks_fts``, contentless (the text
stays in the database), so a search there ranks exactly as the notebook would rank alone in its
instance. Until the file exists (the seconds after activation, or after a restore) searches use
the main table. The file is derived data like the vector files: written beside and renamed into
place, never changed, deleted with its revision's folder, left out of backups.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from sqlalchemy.orm import Session

from storage.evidence import COLUMN_WEIGHTS, Candidate, best_of_members, within_columns

FILE = "lexical.sqlite3"
_DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CANTOPEN"})
# chunks_fts's tokenizer (alembic 0009): both indexes must agree on what a word is.
TOKENIZER = "porter unicode61 remove_diacritics 2"

# ``revision_id`` is indexed (weight 0 in bm25) as in chunks_fts, where it is what scopes a search:
# FTS5 counts every column's words in a row's length, so without it the lengths, and so the scores,
# would differ from the main table's and a revision's results would change when its file appears.
_SCHEMA = (
    f"CREATE VIRTUAL TABLE fts USING fts5(revision_id, context, text, content='', tokenize='{TOKENIZER}');"
    "CREATE TABLE rows (pk INTEGER PRIMARY KEY, resource_id TEXT NOT NULL);"
)
_SERVED_ROWS = """
    SELECT c.id, c.revision_id, c.context, c.text, c.resource_id FROM served.chunks c
    JOIN served.sources s ON s.chunks_revision_id = c.revision_id AND s.chunks_source_id = c.source_id
    WHERE s.revision_id = ? ORDER BY c.id
"""
_BEST = """
    SELECT best.rowid, best.score, rows.resource_id FROM (
        SELECT rowid, bm25(fts, 0.0, ?, ?) AS score FROM fts WHERE fts MATCH ? ORDER BY score, rowid LIMIT ?
    ) AS best JOIN rows ON rows.pk = best.rowid
    ORDER BY best.score, best.rowid
"""


def write(session: Session, revision_id: str, path: Path) -> int:
    """Write the index of the rows ``revision_id`` serves to ``path`` (a new file); their count.

    The rows are copied inside SQLite (the database attached), not through Python: 100k chunks
    take 5-8 s, most of it FTS5 tokenising them.
    """
    database = session.get_bind().url.database
    connection = sqlite3.connect(path)
    try:
        connection.executescript(f"PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; {_SCHEMA}")
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("ATTACH DATABASE ? AS served", (database,))
        with connection:
            connection.execute("INSERT INTO fts(rowid, revision_id, context, text) "
                               f"SELECT id, revision_id, context, text FROM ({_SERVED_ROWS})", (revision_id,))
            connection.execute(f"INSERT INTO rows(pk, resource_id) SELECT id, resource_id FROM ({_SERVED_ROWS})",
                               (revision_id,))
            count = connection.execute("SELECT count(*) FROM rows").fetchone()[0]
        connection.execute("DETACH DATABASE served")
        connection.execute("INSERT INTO fts(fts) VALUES ('optimize')")  # one segment: fewer reads per word
        connection.commit()
        return int(count)
    finally:
        connection.close()


def unreadable(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` says the file itself is damaged or not an index (so it should be written
    again), rather than that one query failed."""
    return getattr(error, "sqlite_errorname", None) in _DAMAGED or "no such table" in str(error)


def candidates(
    path: Path, match: str, limit: int, is_member: Callable[[str], bool],
    weights: tuple[float, float] = COLUMN_WEIGHTS,
) -> list[Candidate]:
    """The ``limit`` best rows of current members for ``match`` in the file at ``path``, best
    first (``sqlite3.DatabaseError`` when it cannot be read)."""
    connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)
    try:
        def best(depth: int) -> list[tuple[int, float, bool]]:
            rows = connection.execute(_BEST, (weights[0], weights[1], within_columns(match), depth)).fetchall()
            return [(int(pk), float(score), is_member(resource_id)) for pk, score, resource_id in rows]

        return best_of_members(best, limit)
    finally:
        connection.close()
