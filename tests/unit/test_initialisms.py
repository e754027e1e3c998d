"""A question's initialisms ("CEO") match the capitalised words that spell them out."""
from __future__ import annotations

from pipeline.answering.initialisms import initialisms_in, spelled_out

CEO = {"ceo": "ceo"}


def test_the_initialisms_a_question_uses() -> None:
    assert initialisms_in("Does Foot Locker's new CEO have previous CEO experience?") == CEO
    assert initialisms_in("What was Pepsico's core EPS growth in FY2022?") == {"eps": "eps"}, "FY2022 is a code"
    assert initialisms_in("WHAT IS the AI strategy?") == {}, "stop words are no terms; two letters are too few"
    assert initialisms_in("Was the INTERNATIONAL committee formed?") == {}, "longer than six letters"


def test_an_initialism_is_spelled_out_by_capitalised_words_only() -> None:
    assert spelled_out("Mary N. Dillon has been appointed President and Chief Executive Officer.", CEO) == {"ceo"}
    assert spelled_out("She served as Global Chief Executive Officer Designate.", CEO) == {"ceo"}
    assert spelled_out("The chief executive officer resigned.", CEO) == set()
    assert spelled_out("Chief Financial Officer and Executive Officer.", CEO) == set()
    assert spelled_out("President and Chief Executive Officer.", {}) == set()
    assert spelled_out("He joined Chase. Executive Officers met.", CEO) == set(), "a run ends at a period"
