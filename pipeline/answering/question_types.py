"""What kind of answer a question asks for, and whether a sentence can be one.

"When was the DMCA signed?" is not answered by a sentence that shares its words but holds no date,
and "How many treaties…?" not by one without a number: the extractive engine skips such sentences
(it refuses rather than quotes one). Only the types that a sentence's surface shows are checked:
a time, a quantity, and for "who"/"where" a name (a capitalised word; the sentence's first only
when it is no stop word) that the question does not already say: "Who signed the DMCA?" is not answered by "The DMCA was
signed after a long debate". "Why" and definitions are left to term coverage, because no cheap
test tells a reason from other words. English question words; other languages are not typed
(every sentence qualifies). Names typing measured with ``python
tests/unit/test_answering_extractive.py 12`` (12 + 12 SQuAD articles, 3,103 + 2,593 questions)
before and after it was added: answered 0.806 both, best sentence holds gold 0.616 both, absent
facts refused 0.940 → 0.941; neutral there, where "who" answers are names anyway.
"""
from __future__ import annotations

from typing import Literal

import regex

from pipeline.textnorm import STOP_WORDS, fold, words

AnswerType = Literal["time", "quantity", "name"]

_TIME_QUESTION = regex.compile(
    r"^(?:when|(?:in|during|by|since|until) (?:what|which) (?:year|decade|century|month|date|period|era)|"
    r"what (?:year|decade|century|month|date|day|time)|which (?:year|decade|century|month|date|day))\b",
    regex.IGNORECASE,
)
_QUANTITY_QUESTION = regex.compile(
    r"^(?:how (?:many|much|long|old|far|large|big|tall|high|deep|wide|heavy|often|fast)|"
    r"what (?:percentage|percent|proportion|share|number|amount|fraction|ratio|size|population))\b",
    regex.IGNORECASE,
)
_NAME_QUESTION = regex.compile(
    r"^(?:who|whom|whose|where|(?:what|which) (?:person|people|company|companies|organi[sz]ation|country|countries|"
    r"city|cities|team|group|university|state|nation|band|artist|author|president|king|queen|emperor|leader))\b",
    regex.IGNORECASE,
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
)
_TIME = regex.compile(
    rf"\b(?:\d{{3,4}}s?|\d{{1,2}}(?:st|nd|rd|th)? century|\d{{1,2}}:\d{{2}}|(?:{_MONTHS})\.?|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|century|decade|centuries|decades|"
    r"years? ago|today|yesterday|bc|bce|ad|ce)\b",
    regex.IGNORECASE,
)
_QUANTITY = regex.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"hundred|hundreds|thousand|thousands|million|millions|billion|billions|dozen|dozens|half|"
    r"single|double|twice|once|several|few|many|most|all|none|percent)\b",
    regex.IGNORECASE,
)


def expected_answer(question: str) -> AnswerType | None:
    """The kind of answer ``question`` asks for, when its wording says so."""
    stripped = question.strip()
    if _TIME_QUESTION.match(stripped):
        return "time"
    if _QUANTITY_QUESTION.match(stripped):
        return "quantity"
    if _NAME_QUESTION.match(stripped):
        return "name"
    return None


def can_answer(sentence: str, wanted: AnswerType | None, asked: frozenset[str] = frozenset()) -> bool:
    """Whether ``sentence`` holds the kind of expression ``wanted`` (any sentence when None); a
    name must be one the question does not already say (``asked``: its folded words)."""
    if wanted == "time":
        return bool(_TIME.search(sentence))
    if wanted == "quantity":
        return bool(_QUANTITY.search(sentence))
    if wanted == "name":
        return any(_is_new_name(word, position, asked) for position, word in enumerate(words(sentence)))
    return True


def _is_new_name(word: str, position: int, asked: frozenset[str]) -> bool:
    """A capitalised word the question does not say. Every sentence's first word is capitalised:
    it counts unless it is a stop word ("The", "In"), so "Clinton signed it" names Clinton."""
    folded = fold(word)
    if not word[:1].isupper() or folded in asked or word == "I":
        return False
    return position > 0 or folded not in STOP_WORDS
