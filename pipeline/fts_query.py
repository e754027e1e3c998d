"""Turn free user text into a safe SQLite FTS5 MATCH expression.

FTS5 has its own query language (``AND``, ``NEAR(...)``, ``col:term``, ``prefix*``, ``-term``,
parentheses, quotes), and a user typing any of it by accident would get a syntax error instead of
results. So the user's text is never passed through: only its words are kept, each one becomes a
double-quoted FTS5 string (a literal phrase, whatever it contains), and the strings are joined with
``OR``. ``bm25()`` then ranks chunks matching more (and rarer) words higher, which suits questions in
natural language better than requiring every word. When the query has several words, the exact
phrase is added as one more ``OR`` term, so chunks containing the words in order score higher.

A year written inside a code ("FY2022", "2023Q1") is one more term: the tokenizer keeps the code
whole, and filings write "fiscal 2022" or "December 31, 2022" (``bench/answer_quality.py``,
FinanceBench recall@5 0.375 → 0.406 with the deployed search).
"""
from __future__ import annotations

import regex

from pipeline.textnorm import STOP_WORDS, fold, words

MAX_TERMS = 32
MAX_TERM_CHARS = 64
# FTS5 operators are case-sensitive keywords; typed in capitals they are query syntax, not content.
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_YEAR_IN_CODE = regex.compile(r"(?<=\p{L})(?:19|20)[0-9]{2}(?![0-9])|(?<![0-9])(?:19|20)[0-9]{2}(?=\p{L})")
MAX_YEARS = 8


def build_match_query(user_query: str) -> str | None:
    """Return an FTS5 MATCH expression for ``user_query``, or None when it has no searchable word."""
    terms = match_terms(user_query)
    return as_match(terms) if terms else None


def match_terms(user_query: str) -> list[str]:
    """The terms the MATCH expression ORs: ``word_terms``, then the years written inside codes."""
    terms = word_terms(user_query)
    said = {fold(term) for term in terms}
    tokens = words(user_query)[:MAX_TERMS]
    years = [year.group(0) for token in tokens for year in _YEAR_IN_CODE.finditer(token[:MAX_TERM_CHARS])]
    return terms + [year for year in dict.fromkeys(years) if year not in said][:MAX_YEARS]


def word_terms(user_query: str) -> list[str]:
    """The query's own words, then the phrase (plain BM25's query, the benchmarks' baseline).

    Stop words are dropped from the single-word terms when other words remain (they match nearly
    every chunk and only slow the query down) but stay in the phrase term.
    """
    tokens = [token[:MAX_TERM_CHARS] for token in words(user_query) if token not in _OPERATORS][:MAX_TERMS]
    if not tokens:
        return []
    content = [token for token in tokens if fold(token) not in STOP_WORDS] or tokens
    first_spelling: dict[str, str] = {}
    for token in content:
        first_spelling.setdefault(fold(token), token)  # FTS5 folds case itself: "Cat" repeats "cat"
    terms = list(first_spelling.values())
    if len(tokens) >= 2:
        terms.append(" ".join(tokens))
    return terms


def as_match(terms: list[str]) -> str:
    """``terms`` as one FTS5 expression: each a literal string, joined with ``OR``."""
    return " OR ".join(_quote(term) for term in terms)


def _quote(term: str) -> str:
    """Quote ``term`` as an FTS5 string: wrap it in double quotes and double any inside it."""
    return '"' + term.replace('"', '""') + '"'
