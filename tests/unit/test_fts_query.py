"""Tests of the FTS5 query builder, run against real in-memory SQLite FTS5 tables."""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fts_query import MAX_TERMS, MAX_YEARS, build_match_query, match_terms

ROWS = [
    "Trace-based just-in-time compilation for dynamic languages",
    "The café served a naïve résumé of the AND gate",
    "Near the river, columns of text: col x and y",
    "化学方程式 又称 化学反应式",
    "Loop traces are recorded and compiled",
]
# Fragments of FTS5 syntax that a raw query would choke on.
SYNTAX = ['"', "'", "*", "-", "+", "^", ":", "(", ")", "{", "}", "NEAR(", "NEAR/2", "AND", "OR", "NOT", "col:"]
SYNTAX += ["\x00", "\ud800", " "]  # NUL ends an FTS5 string early; a lone surrogate cannot be bound


def fts_table(tokenizer: str) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    connection.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize={tokenizer!r})")
    connection.executemany("INSERT INTO t(text) VALUES (?)", [(row,) for row in ROWS])
    return connection


@pytest.fixture(scope="module")
def tables() -> Iterator[list[sqlite3.Connection]]:
    connections = [fts_table("unicode61 remove_diacritics 2"), fts_table("trigram")]
    yield connections
    for connection in connections:
        connection.close()


def search(connection: sqlite3.Connection, user_query: str) -> list[str]:
    expression = build_match_query(user_query)
    if expression is None:
        return []
    rows = connection.execute("SELECT text FROM t WHERE t MATCH ? ORDER BY bm25(t)", (expression,))
    return [row[0] for row in rows]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(SYNTAX)), max_size=40).map("".join))
def test_no_input_makes_match_raise(tables: list[sqlite3.Connection], user_query: str) -> None:
    for connection in tables:
        search(connection, user_query)


@pytest.mark.parametrize("user_query", ["AND", "NEAR(", '"', "*", "-", "((", "   ", "", "OR NOT", "\x00"])
def test_syntax_alone_is_not_searchable(user_query: str) -> None:
    assert build_match_query(user_query) is None


@pytest.mark.parametrize(
    ("user_query", "expected_first"),
    [
        ("col:x", ROWS[2]),
        ('"naive resume', ROWS[1]),
        ("NEAR(river", ROWS[2]),
        ("trace-based -compilation*", ROWS[0]),
        ("CAFE", ROWS[1]),
    ],
)
def test_hostile_looking_queries_still_find_their_words(
    tables: list[sqlite3.Connection], user_query: str, expected_first: str
) -> None:
    assert search(tables[0], user_query)[0] == expected_first


def test_words_are_quoted_or_joined_with_an_exact_phrase_boost() -> None:
    expression = build_match_query('He said "loop traces" AND then')
    assert expression == '"said" OR "loop" OR "traces" OR "He said loop traces then"'
    assert build_match_query("the of") == '"the" OR "of" OR "the of"'
    assert build_match_query("Loop loop") == '"Loop" OR "Loop loop"'


def test_exact_phrase_outranks_scattered_words(tables: list[sqlite3.Connection]) -> None:
    connection = tables[0]
    connection.executemany(
        "INSERT INTO t(text) VALUES (?)",
        [("traces of a loop, with loop and traces",), ("loop traces",)],
    )
    try:
        assert search(connection, "loop traces")[0] == "loop traces"
    finally:
        connection.execute("DELETE FROM t WHERE rowid > ?", (len(ROWS),))


def test_terms_and_their_length_are_capped() -> None:
    expression = build_match_query(" ".join(f"w{i}" for i in range(100)) + " " + "x" * 500)

    assert expression is not None
    terms = expression.split(" OR ")
    assert len(terms) == MAX_TERMS + 1  # the single words plus the phrase
    assert max(len(term) for term in terms[:-1]) <= 66


def test_a_year_written_inside_a_code_is_searched_on_its_own() -> None:
    """Filings write "fiscal 2022" where questions write "FY2022", which the tokenizer keeps whole."""
    assert match_terms("Boeing's FY2022 tax rate") == ["Boeing", "s", "FY2022", "tax", "rate", "Boeing s FY2022 tax rate", "2022"]
    assert match_terms("revenue in 2023Q1 and in 2023") == ["revenue", "2023Q1", "2023", "revenue in 2023Q1 and in 2023"]
    assert match_terms("Q2 of FY24, 10K, 12023Q1, RTX2080") == ["Q2", "FY24", "10K", "12023Q1", "RTX2080",
                                                              "Q2 of FY24 10K 12023Q1 RTX2080", "2080"]
    assert len(match_terms(" ".join(f"FY{year}" for year in range(1950, 2020)))) == MAX_TERMS + 1 + MAX_YEARS

    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')")
    connection.executemany("INSERT INTO t(text) VALUES (?)", [
        ("The effective tax rate was 21% in fiscal 2021.",), ("The effective tax rate was 19% in fiscal 2022.",),
    ])
    try:
        expression = build_match_query("effective tax rate FY2022")
        top = connection.execute("SELECT text FROM t WHERE t MATCH ? ORDER BY bm25(t)", (expression,)).fetchone()
    finally:
        connection.close()
    assert top == ("The effective tax rate was 19% in fiscal 2022.",)


def test_squad_questions_find_their_paragraph(corpus_dir: Path) -> None:
    """Questions in plain English over 2,067 real paragraphs: OR + bm25 must rank the source high."""
    squad = corpus_dir / "qa" / "squad_v1.1_dev"
    connection = sqlite3.connect(":memory:")
    connection.execute(
        'CREATE VIRTUAL TABLE t USING fts5(doc_id UNINDEXED, text, tokenize="unicode61 remove_diacritics 2")'
    )
    documents = [json.loads(line) for line in (squad / "corpus.jsonl").read_text().splitlines()]
    connection.executemany("INSERT INTO t VALUES (?, ?)", [(d["_id"], f"{d['title']} {d['text']}") for d in documents])
    gold = dict(line.split("\t")[:2] for line in (squad / "qrels" / "test.tsv").read_text().splitlines()[1:])
    questions = [json.loads(line) for line in (squad / "queries.jsonl").read_text().splitlines()][::50]

    hits = 0
    for question in questions:
        expression = build_match_query(question["text"])
        top = connection.execute("SELECT doc_id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", [expression])
        hits += gold[question["_id"]] in {row[0] for row in top}
    connection.close()
    print(f"\nSQuAD hit rate@10 on {len(questions)} questions: {hits / len(questions):.2f}")
    assert hits / len(questions) >= 0.8
