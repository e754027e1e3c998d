"""bm25 as FTS5's ``bm25()`` computes it (fts5_aux.c), over posting lists of our own.

FTS5 calls its ranking function once for every row that matches any word of a question (about a
microsecond each) and sorts them all; a 1M-chunk revision's common words match hundreds of
thousands of rows, which took 233 / 671 ms (p50 / p95) per question. Scoring the same rows from
posting lists with numpy, a word at a time, takes 20 / 52 ms and gives the same scores to the bit:
the terms are added in FTS5's order and every operation is FTS5's, in its order
(docs/decisions/0022).

The lists come from FTS5's own index (its ``fts5vocab`` instances), so a word is exactly what FTS5
says it is; phrases of several words are left to FTS5, which finds them from its positions.

A revision's rows may lie in several files (storage.vector_packs), some rows of which it does not
serve, so the statistics (rows, their average length, the rows holding a term) are the served rows'
summed over the files, and each row's length is stored rather than its norm.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Mapping

import numpy as np

K1, B = 1.2, 0.75  # FTS5's constants
MIN_IDF = 1e-6  # what FTS5 gives a word found in more than half of the rows
_SCHEMA = (
    "CREATE TABLE postings (term TEXT PRIMARY KEY, rows BLOB NOT NULL, hits BLOB NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE row_lengths (lengths BLOB NOT NULL);"
)
# Each instance as one integer: its row, shifted, and the index of its column's weight.
_INSTANCES = "SELECT term, group_concat(doc * {shift} + {column}) FROM temp.instances GROUP BY term"
_WIDTHS = {2: np.uint16, 4: np.uint32}  # the bytes of one row's hits: most fit in 16 bits


def write_postings(connection: sqlite3.Connection, table: str, weights: Mapping[str, int], rows: int) -> None:
    """Write the posting lists of FTS5 ``table`` (rowids ``0..rows-1``) into its database.

    For each term: the rows holding it in a column of non-zero weight, ascending, and its hits
    there, each weighted by its column (whole numbers, so they are stored exactly). Then every
    row's length, from all its columns, as FTS5 counts a row's length.
    """
    connection.executescript(_SCHEMA)
    connection.execute(f"CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, {table}, instance)")
    names = list(weights)
    column = "CASE col " + " ".join(f"WHEN '{name}' THEN {i}" for i, name in enumerate(names)) + " END"
    shift = 1 << max(1, len(names) - 1).bit_length()
    by_index = np.array([weights[name] for name in names], dtype=np.int64)
    lengths = np.zeros(rows, dtype=np.int64)
    connection.executemany(
        "INSERT INTO postings (term, rows, hits) VALUES (?, ?, ?)",
        _postings(connection.execute(_INSTANCES.format(shift=shift, column=column)), shift, by_index, lengths),
    )
    connection.execute("INSERT INTO row_lengths (lengths) VALUES (?)", (lengths.astype(np.int64).tobytes(),))
    connection.execute("DROP TABLE temp.instances")


def _postings(
    instances: sqlite3.Cursor, shift: int, weights: np.ndarray, lengths: np.ndarray
) -> Iterator[tuple[str, bytes, bytes]]:
    """Each term's (term, rows, weighted hits) from its instances, each packed as
    ``row * shift + column``; counts every instance, whatever its column, into ``lengths`` (complete
    once the last term is read). ``fts5vocab`` lists a term's instances by row; ``group_concat``
    keeps that order here, which is checked, since SQL does not promise it."""
    for term, joined in instances:
        codes = np.fromstring(joined, dtype=np.int64, sep=",")
        rows = codes // shift
        if np.any(rows[1:] < rows[:-1]):
            raise ValueError(f"the instances of {term!r} are not in row order")
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        lengths[rows[starts]] += np.diff(np.r_[starts, len(rows)])
        weighted = weights[codes % shift]
        kept = weighted > 0
        if not kept.any():
            continue
        rows, weighted = rows[kept], weighted[kept]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        hits = np.add.reduceat(weighted, starts)
        width = np.uint16 if hits.max() <= np.iinfo(np.uint16).max else np.uint32
        yield term, rows[starts].astype(np.int32).tobytes(), hits.astype(width).tobytes()


def length_norms(lengths: np.ndarray, average: float) -> np.ndarray:
    """k1·(1 − b + b·|D| / avgdl) for every row, in FTS5's order of operations."""
    return K1 * (1 - B + B * lengths.astype(np.float64) / average)


def average_length(total: int, rows: int) -> float:
    """avgdl as FTS5 computes it: all the rows' tokens over their count, in doubles."""
    return float(total) / float(rows) if rows else 1.0


def row_lengths(connection: sqlite3.Connection) -> np.ndarray:
    """The lengths ``write_postings`` stored, one per row."""
    (data,) = connection.execute("SELECT lengths FROM row_lengths").fetchone()
    return np.frombuffer(data, dtype=np.int64)


def idf(rows: int, matching: int) -> float:
    """FTS5's idf of a term found in ``matching`` of ``rows`` rows, floored for common terms."""
    value = math.log((rows - matching + 0.5) / (matching + 0.5))
    return value if value > 0.0 else MIN_IDF


def postings(connection: sqlite3.Connection, term: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows holding ``term`` in a weighted column, ascending, and its weighted hits there."""
    found = connection.execute("SELECT rows, hits FROM postings WHERE term = ?", (term,)).fetchone()
    if found is None:
        return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float64)
    rows = np.frombuffer(found[0], dtype=np.int32)
    return rows, np.frombuffer(found[1], dtype=_WIDTHS[len(found[1]) // len(rows)]).astype(np.float64)


def add(scores: np.ndarray, rows: np.ndarray, hits: np.ndarray, norms: np.ndarray, weight: float) -> None:
    """Add a term's share of bm25 to the ``scores`` of the ``rows`` holding it ``hits`` times, whose
    length ``norms`` these are, given its idf ``weight`` (a row without it adds nothing)."""
    scores[rows] += weight * ((hits * (K1 + 1.0)) / (hits + norms))


def hits_of(scores: np.ndarray, norms: np.ndarray, weight: float) -> np.ndarray:
    """The weighted hits behind FTS5's bm25 ``scores`` of one phrase (positive), from the norms and
    idf ``weight`` it used: ``s = w·f·(k1+1)/(f+n)`` solved for ``f``, which is a whole number, so
    rounding gives it exactly."""
    return np.rint(scores * norms / (weight * (K1 + 1.0) - scores))
