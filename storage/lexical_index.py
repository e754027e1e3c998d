"""The full-text index of a pack of rows: an FTS5 file beside the pack's vectors, with posting lists.

The main ``chunks_fts`` table holds every notebook's rows, so bm25 takes its statistics (how many
rows hold a word, the average row length) from the whole instance, and a phrase's position lists
are read instance-wide. A 10k-chunk notebook searched 2.9× slower inside an instance that also
held 1M chunks, and another notebook's rows could reorder its near-equal hits. So the coordinator
writes the rows of each pack of source versions (storage.vector_packs) into ``lexical-3.sqlite3``
in the pack's folder: the same tokenizer and columns as ``chunks_fts``, contentless (the text stays
in the database). A revision searches the packs its folder names (storage.vector_files), leaving
out the rows of versions it no longer serves, with statistics summed over the rows it serves, so it
ranks exactly as the notebook would rank alone in its instance, and a refresh indexes only the
rows of what changed. Until every pack has its file (the seconds after activation, or after a
restore) searches use the main table. The files are derived data like the vector files: written
beside and renamed into place, never changed, deleted with their pack, left out of backups.

Each file also holds the rows' posting lists, from which words are ranked by numpy instead of by
FTS5's per-row callback, with the same scores (storage.bm25); FTS5 still finds phrases, and how
often each row holds one is read back from FTS5's bm25 of it. Rows are numbered ``0..n-1`` in the
order of their chunk ids, so ties still go to the lower chunk id, as FTS5's ``ORDER BY score,
rowid`` did, within a pack and, by the merge, across packs.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
from sqlalchemy.orm import Session

from pipeline.fts_query import as_match
from storage import bm25, fts_tokens, top_k, vector_packs
from storage.evidence import COLUMN_WEIGHTS, Candidate, best_of_members, within_columns

# The file's layout, also in its name, so that a process of another version never reads it as its
# own (format 1 kept chunk ids as rowids; format 2, a revision's whole file, kept norms, not lengths).
# A file whose ``PRAGMA user_version`` says otherwise is treated as damaged and written again.
FORMAT = 3
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
    "CREATE TABLE row_versions (codes BLOB NOT NULL, keys TEXT NOT NULL);"
    "CREATE TEMP TABLE ordered (position INTEGER PRIMARY KEY, pk INTEGER, resource_id TEXT, version TEXT);"
)
# The chunks of the source versions given as a JSON list of ``<revision>/<source>`` keys.
_VERSION_ROWS = """
    SELECT c.id, c.resource_id, v.value FROM json_each(?) v JOIN served.chunks c
    ON c.revision_id = substr(v.value, 1, instr(v.value, '/') - 1) AND c.source_id = substr(v.value, instr(v.value, '/') + 1)
"""
_PHRASE = f"SELECT rowid, bm25(fts, {', '.join(f'{w:.1f}' for w in WEIGHTS.values())}) FROM fts WHERE fts MATCH ?"
_ROWS = "SELECT position, pk, resource_id FROM rows WHERE position IN (SELECT value FROM json_each(?))"


@dataclass(frozen=True)
class Pack:
    """A pack's full-text file, and the source versions of its rows that the searched revision
    does not serve."""

    path: Path
    unserved: frozenset[str] = frozenset()


class Unreadable(sqlite3.DatabaseError):
    """The file at ``path`` is damaged, or was written by another version of this module: it is
    removed and written again."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def older_files(folder: Path) -> list[Path]:
    """Files of other formats in a folder, which no process of this version reads."""
    return [path for path in folder.glob(_ANY_FORMAT) if path.name != FILE]


def write(session: Session, versions: Collection[str], path: Path) -> int:
    """Write the index of the rows of the source ``versions`` to ``path`` (a new file); their count.

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
            connection.execute("INSERT INTO ordered (position, pk, resource_id, version) "
                               f"SELECT row_number() OVER (ORDER BY id) - 1, id, resource_id, value FROM ({_VERSION_ROWS})",
                               (json.dumps(sorted(versions)),))
            connection.execute("INSERT INTO rows (position, pk, resource_id) SELECT position, pk, resource_id FROM ordered")
            connection.execute("INSERT INTO fts (rowid, revision_id, context, text) "
                               "SELECT r.position, c.revision_id, c.context, c.text "
                               "FROM rows r JOIN served.chunks c ON c.id = r.pk ORDER BY r.position")
            keys, codes = np.unique(
                [version for (version,) in connection.execute("SELECT version FROM ordered ORDER BY position")],
                return_inverse=True)
            connection.execute("INSERT INTO row_versions (codes, keys) VALUES (?, ?)",
                               (codes.astype(np.int32).tobytes(), json.dumps(keys.tolist())))
            count = len(codes)
        connection.execute("DETACH DATABASE served")
        connection.execute("INSERT INTO fts(fts) VALUES ('optimize')")  # one segment: fewer reads per word
        with connection:
            bm25.write_postings(connection, "fts", WEIGHTS, count)
            connection.execute(f"PRAGMA user_version = {FORMAT}")
        return count
    finally:
        connection.close()


def _damaged(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` says the file itself is damaged or not an index (so it should be written
    again), rather than that one query failed."""
    return getattr(error, "sqlite_errorname", None) in _DAMAGED or "no such table" in str(error)


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Report what shows ``path`` damaged as ``Unreadable``: SQLite's word for it, or lists that
    SQLite found sound but that are not."""
    try:
        yield
    except Unreadable:
        raise
    except sqlite3.DatabaseError as err:
        if _damaged(err):
            raise Unreadable(path, f"{path.parent.name}/{path.name}: {err}") from err
        raise
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise Unreadable(path, f"{path.parent.name}/{path.name} holds damaged lists: {err!r}") from err


@dataclass
class _Open:
    """A pack's file opened for one search: its rows' lengths, which of them are served, and the
    lengths of those."""

    pack: Pack
    connection: sqlite3.Connection
    lengths: np.ndarray
    served: np.ndarray | None
    served_lengths: np.ndarray

    @classmethod
    def of(cls, pack: Pack, stack: ExitStack) -> _Open:
        connection = stack.enter_context(closing(
            sqlite3.connect(f"file:{quote(str(pack.path))}?mode=ro&immutable=1", uri=True)))
        with _reading(pack.path):
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            if version != FORMAT:
                raise Unreadable(pack.path, f"{pack.path.name} is of format {version}, not {FORMAT}")
            lengths = bm25.row_lengths(connection)
            served = None
            if pack.unserved:
                codes, keys = connection.execute("SELECT codes, keys FROM row_versions").fetchone()
                served = vector_packs.served_rows(np.frombuffer(codes, dtype=np.int32), json.loads(keys), pack.unserved)
                if served is not None and len(served) != len(lengths):
                    raise ValueError("the rows' versions and lengths differ in number")
        return cls(pack, connection, lengths, served, lengths if served is None else lengths[served])

    def term(self, term: str, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The served rows holding ``term`` (FTS5's ``tokens`` of it) and their weighted hits."""
        with _reading(self.pack.path):
            if len(tokens) == 1:
                rows, hits = bm25.postings(self.connection, tokens[0])
            else:
                rows, hits = self._phrase(term)
            if len(rows) and (rows.min() < 0 or rows.max() >= len(self.lengths)):
                raise ValueError(f"a list of {term!r} names rows beyond the file's {len(self.lengths)}")
            if self.served is None:
                return rows, hits
            kept = self.served[rows]
            return rows[kept], hits[kept]

    def _phrase(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """A phrase's rows and hits, read back from FTS5's bm25 of it alone over this file, whose
        statistics are the file's own."""
        found = self.connection.execute(_PHRASE, (within_columns(as_match([term])),)).fetchall()
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        rows, shares = np.array(found).T
        rows = rows.astype(np.int64)
        norms = bm25.length_norms(self.lengths[rows], bm25.average_length(int(self.lengths.sum()), len(self.lengths)))
        return rows, bm25.hits_of(-shares, norms, bm25.idf(len(self.lengths), len(rows)))

    def best(self, scores: np.ndarray, depth: int, is_member: Callable[[str], bool]) -> list[tuple[int, float, bool]]:
        """The ``depth`` best-scoring rows of ``scores`` (this file's): each one's chunk id, FTS5's
        score (negative), and whether a current member's."""
        matching = np.flatnonzero(scores)
        positions = matching[top_k.best(scores[matching], depth)].tolist()
        with _reading(self.pack.path):
            rows = {position: (pk, resource_id) for position, pk, resource_id
                    in self.connection.execute(_ROWS, (json.dumps(positions),))}
            return [(rows[p][0], -float(scores[p]), is_member(rows[p][1])) for p in positions]


def candidates(packs: Sequence[Pack], terms: list[str], limit: int, is_member: Callable[[str], bool]) -> list[Candidate]:
    """The ``limit`` best rows of current members for the OR of ``terms`` (pipeline.fts_query) in
    the rows ``packs`` serve, best first, scored as FTS5's bm25 scores them over those rows alone
    (``sqlite3.DatabaseError`` when a file cannot be read; ``Unreadable`` names a damaged one)."""
    with ExitStack() as stack:
        opened = [_Open.of(pack, stack) for pack in packs]
        scores = _scores(opened, terms)

        def best(depth: int) -> list[tuple[int, float, bool]]:
            found = [row for pack, pack_scores in zip(opened, scores) for row in pack.best(pack_scores, depth, is_member)]
            return sorted(found, key=lambda candidate: (candidate[1], candidate[0]))[:depth]

        return best_of_members(best, limit)


def _scores(opened: list[_Open], terms: list[str]) -> list[np.ndarray]:
    """Every row's bm25 for the OR of ``terms``, per pack, as a positive number (FTS5's, negated),
    0 where none matches or the row is not served. The statistics are the served rows': their
    count, their average length, and per term the served rows holding it. Terms are added in
    order, as FTS5 adds them; a row's norm is computed where a term holds it (elementwise, so
    the same bits as all of them at once)."""
    served = sum(len(pack.served_lengths) for pack in opened)
    average = bm25.average_length(sum(int(pack.served_lengths.sum()) for pack in opened), served)
    scores = [np.zeros(len(pack.lengths)) for pack in opened]
    for term, tokens in zip(terms, fts_tokens.tokens(terms, TOKENIZER), strict=True):
        if not tokens:
            continue
        found = [pack.term(term, tokens) for pack in opened]
        weight = bm25.idf(served, sum(len(rows) for rows, _ in found))
        for pack, pack_scores, (rows, hits) in zip(opened, scores, found):
            bm25.add(pack_scores, rows, hits, bm25.length_norms(pack.lengths[rows], average), weight)
    return scores
