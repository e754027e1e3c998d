"""Initialisms a question uses, found spelled out in the evidence.

A question says "CEO" where a filing says "Chief Executive Officer", and "EPS" where a report
says "Earnings Per Share"; a term that matches only the letters would count the spelled-out
sentence as not covering the question's rarest word. So a sentence holds an initialism of the
question when it holds it as written or as a run of capitalised words whose first letters spell
it. Only runs of capitalised words count: "chief executive officer" in lower case is too often
just three words.

Measured against the engine without it, the same day: ``bench/answerability.py`` test split
0.690 right, 0.950 refused either way; ``bench/answer_quality.py`` SQuAD 0.718 → 0.719 answered
right, refusals unchanged. Foot Locker's 8-K answers "Who was appointed CEO?", refused before.
"""
from __future__ import annotations

import regex

from pipeline.answering.sentences import content_terms
from pipeline.textnorm import words

_SHORTEST, _LONGEST = 3, 6
# Capitalised words separated by spaces alone: a period, comma or line break ends the run, so
# "He joined Chase. Executive Officers met." spells no "CEO".
_CAPITALISED_RUN = regex.compile(r"\p{Lu}\p{L}*(?:[ \t]+\p{Lu}\p{L}*)+")


def initialisms_in(question: str) -> dict[str, str]:
    """The question's words in capitals of 3 to 6 letters, by their letters in lower case, each
    with the term it is scored as (``content_terms``: folded and stemmed). Two letters spell too
    much by chance ("AI" in "Apple Inc."); a stop word in capitals ("THE …") is no term."""
    found: dict[str, str] = {}
    for word in words(question):
        if _SHORTEST <= len(word) <= _LONGEST and word.isalpha() and word.isupper():
            for term in content_terms(word):
                found.setdefault(word.lower(), term)
    return found


def spelled_out(text: str, initialisms: dict[str, str]) -> set[str]:
    """The terms of ``initialisms`` whose letters are the first letters of consecutive words of a
    run of capitalised words in ``text`` ("Chief Executive Officer", or within "Global Chief
    Executive Officer Designate", gives the term of "CEO")."""
    if not initialisms:
        return set()
    found: set[str] = set()
    for run in _CAPITALISED_RUN.finditer(text):
        letters = "".join(word[0].lower() for word in run.group(0).split())
        found.update(term for letters_of, term in initialisms.items() if letters_of in letters)
    return found
