"""One definition of "a word" for everything that compares text lexically.

The FTS5 query builder and the hashing embedder must agree on what a word is, otherwise a query
term the vectors understand could be dropped from the keyword search, or the reverse. A word is a
maximal run of letters, digits and combining marks (``\\p{M}``, so Devanagari or Thai words keep
their vowel signs); everything else, including ``_`` and every FTS5 operator character, separates
words. The third-party ``regex`` module is used because the stdlib ``re`` has no Unicode property
classes.
"""
from __future__ import annotations

import unicodedata

import regex

_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_COMBINING_DIACRITICS = regex.compile(r"[\u0300-\u036f]+")

# Function words that carry no topic. Kept small on purpose: a wrong entry silently hides a term.
STOP_WORDS = frozenset(
    "a about after all also an and any are as at be because been but by can could did do does for "
    "from had has have he her his how i if in into is it its may me my no not of on or our she so "
    "some such than that the their them then there these they this those to was we were what when "
    "where which while who why will with would you your".split()
)


def words(text: str) -> list[str]:
    """Return the words of ``text`` in order, unchanged (no case or accent folding)."""
    return _WORD.findall(text)


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where each of ``words(text)`` is in ``text``: its start and end."""
    return [match.span() for match in _WORD.finditer(text)]


def fold(text: str) -> str:
    """Fold ``text`` for matching: NFKC, case-folded, Latin/Greek/Cyrillic accents removed.

    NFKC turns ligatures (``ﬁ``), full-width and half-width forms into plain letters, so PDF
    typography does not split a word into a different feature. Only the "Combining Diacritical
    Marks" block is stripped, mirroring SQLite's ``remove_diacritics``: stripping every combining
    mark would erase the vowels of Indic scripts.
    """
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", _COMBINING_DIACRITICS.sub("", decomposed))
