"""Which names a question uses, and whether a passage mentions them.

"How does Boeing's effective tax rate compare …?" is not answered by Amcor's tax rate, however well
that sentence covers the other words: the extractive engine quotes a chunk whose document's names
are known only when it mentions every name the question uses, in its text or among those names
(``QuestionNames``). ``names_in`` reads the names a question writes, ``document_names_in`` those it
writes in capitals or as a possessive first word that a document goes by.
"""
from __future__ import annotations

from dataclasses import dataclass

import regex

from pipeline.answering.sentences import content_terms, sentence_spans
from pipeline.answering.types import EvidenceItem
from pipeline.textnorm import fold, word_spans, words


@dataclass(frozen=True)
class QuestionNames:
    """The names of a question, as terms, and those of several words that the evidence writes in
    full somewhere (each mentioned by its last word, ``mentions``)."""

    names: frozenset[str]
    written_in_full: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, question: str, evidence: list[EvidenceItem], terms_in_order: list[list[str]]) -> QuestionNames:
        """``terms_in_order``: each evidence item's ``content_terms``, in order."""
        names = names_in(question) | document_names_in(question, evidence)
        written = tuple(
            name for name in name_runs(question) if any(_written_together(name, terms) for terms in terms_in_order)
        )
        return cls(frozenset(names), written)

    def __bool__(self) -> bool:
        return bool(self.names)

    def mentions(self, known: set[str]) -> bool:
        """Whether a chunk whose text and document names hold the terms ``known`` mentions every
        name: each of its words, or, for a name of several words that the evidence writes in full
        somewhere, its last word ("Newton was sacked by DeMarcus Ware" mentions "Cam Newton" when
        another passage says "quarterback Cam Newton")."""
        missing = self.names - known
        for name in self.written_in_full:
            if name[-1] in known:
                missing -= set(name)
        return not missing


# English function words that German does not share: textnorm.STOP_WORDS holds "was", "in" and
# "an", which would take "Was ist die Hauptstadt …?" for English and require "Hauptstadt".
_ENGLISH = frozenset("the of what which who whom whose how does did do is are were has have and to for with".split())
# A sentence's first word followed by 's: "Boeing's effective tax rate …?", "… Thanks. Amcor's …?".
_POSSESSIVE_OPENING = regex.compile(r"(?:^|[.!?]\s+)[\W_]*(\p{Lu}\p{L}+)['\u2019]s\b")


def _written_together(name: tuple[str, ...], terms: list[str]) -> bool:
    """Whether ``terms`` hold the terms of ``name`` one after another."""
    return any(tuple(terms[start : start + len(name)]) == name for start, term in enumerate(terms) if term == name[0])


def name_runs(question: str) -> list[tuple[str, ...]]:
    """The names ``names_in`` reads that are written as several words side by side ("Marie Curie",
    "the Carolina Panthers"), each as its terms."""
    runs = [tuple(content_terms(" ".join(run))) for run in _capitalised_runs(question)]
    return [run for run in runs if len(run) > 1]


def _capitalised_runs(question: str) -> list[list[str]]:
    """The words ``names_in`` takes for names, grouped where only spaces separate them; none in a
    question that is not in English."""
    if not _ENGLISH.intersection(fold(word) for word in words(question)):
        return []
    runs: list[list[str]] = []
    for start, end in sentence_spans(question, headings=False):
        sentence = question[start:end]
        previous_end = None
        for position, (first, last) in enumerate(word_spans(sentence)):
            word = sentence[first:last]
            if position == 0 or not word[0].isupper() or not word.isalpha() or word.isupper():
                previous_end = None
                continue
            if previous_end is not None and sentence[previous_end:first].isspace():
                runs[-1].append(word)
            else:
                runs.append([word])
            previous_end = last
    return runs


def names_in(question: str) -> set[str]:
    """The names an English question uses, as terms: a chunk whose document's names are known is
    quoted only when it mentions every one of them, in its text or among those names. "How does
    Boeing's effective tax rate compare …" is not answered by Amcor's tax rate, however well that
    sentence covers the other words; before this, FinanceBench's Boeing question quoted Amcor's 10-K.

    A name is a capitalised word written in mixed case that does not open a sentence of the
    question ("Thanks! Now, what …"; sentences are split as quotes are, so "the U.S. Congress"
    holds a name). Acronyms are left out ("the Pepsico AGM" is an "Annual Meeting" in the
    filing), and so are codes with digits ("FY2022" is "fiscal 2022"): sources spell those
    differently (``document_names_in`` takes back those a document goes by). Only English questions are read (``_ENGLISH``): German capitalises
    every noun, and inflected languages change a name's ending ("Москве", "Москва"). Evidence
    without document names (a knowledge note's passages) is not checked. Every word of a name
    counts, except that a name of several words which the evidence writes in full somewhere is
    mentioned by its last word (``name_runs``): "Curie discovered polonium" mentions "Marie Curie"
    where another passage says "Marie Curie". Taking any one word of a run of capitals, written in
    full or not, let "the first Warsaw President" be answered by a sentence about a president
    (SQuAD absent documents refused 0.897 → 0.883); the last word, where the full name is written,
    moved no refusal rate (SQuAD 0.897, 0.957 on 10 articles, ``bench/answerability.py`` dev 0.961
    and test 0.950), and right answers by +0.003 dev, +0.001 test, +0.002 on 10 articles and
    −0.001 on SQuAD's whole set; FinanceBench unchanged. Measured against the engine without the
    rule, the same day (typed answers on):

    * ``bench/answer_quality.py`` SQuAD (1,000 questions of each kind): answered with a gold chunk
      0.729 → 0.718, absent documents refused 0.839 → 0.897; on a 10-article notebook 0.683 →
      0.671 and 0.938 → 0.957; FinanceBench 9 of 14 → 9 of 13 first citations on a gold page.
    * ``bench/answerability.py``: test split right 0.707 → 0.690, refused 0.931 → 0.950 (dev 0.697
      → 0.681, 0.940 → 0.961). Requiring every capitalised word (acronyms and codes too) lost more
      (test 0.679 / 0.953; FinanceBench 4 of 8); refusing only a name that no retrieved chunk
      mentions gained less (SQuAD 0.721 / 0.866).
    * With the sentence model's gate (``--similarity minilm --stride 4``), test split: right 0.715
      → 0.696, refused 0.958 → 0.972.
    """
    return set(content_terms(" ".join(word for run in _capitalised_runs(question) for word in run)))


def document_names_in(question: str, evidence: list[EvidenceItem]) -> set[str]:
    """Words ``names_in`` leaves out that name one of the evidence's documents: held to its rule
    too. It leaves out words in capitals ("the Pepsico AGM" is an "Annual Meeting" in the filing)
    and a sentence's first word ("Now, what …"); a word a document goes by is a name, when it is
    in capitals ("What industry does AMCOR primarily operate in?", the file AMCOR_2023_10K: it
    quoted Pfizer's 10-K) or a possessive first word ("Boeing's effective tax rate in FY2022?": it
    quoted Amcor's). Any capitalised first word would make "Summary of the tax rate?" require
    "summary" of every chunk in a notebook that holds a Summary.md. On FinanceBench the AMCOR
    question now quotes Amcor's 10-Q (still not the gold page: 9 of 13 either way); with the
    initialisms (``pipeline.answering.initialisms``), measured together, SQuAD's figures move by
    0.001."""
    candidates = [word for word in words(question) if len(word) > 1 and word.isalpha() and word.isupper()]
    candidates += [match.group(1) for match in _POSSESSIVE_OPENING.finditer(question)]
    if not candidates:
        return set()
    known = {term for item in evidence for term in content_terms(item.names)}
    return known.intersection(content_terms(" ".join(candidates)))
