"""What kind of answer a question asks for, and whether a sentence can be one.

"When was the DMCA signed?" is not answered by a sentence that shares its words but holds no date,
and "How many treaties…?" not by one without a number: the extractive engine skips such sentences
(it refuses rather than quotes one). Only the types that a sentence's surface shows reliably are
checked (a time, a quantity); "who", "why" and definitions are left to term coverage, because no
cheap test tells a name or a reason from other words. English question words; other languages
are not typed (every sentence qualifies).
"""
from __future__ import annotations

from typing import Literal

import regex

AnswerType = Literal["time", "quantity"]

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
    return None


def can_answer(sentence: str, wanted: AnswerType | None) -> bool:
    """Whether ``sentence`` holds the kind of expression ``wanted`` (any sentence when None)."""
    if wanted == "time":
        return bool(_TIME.search(sentence))
    if wanted == "quantity":
        return bool(_QUANTITY.search(sentence))
    return True
