"""Key terms of a text and the names of concepts: how a note finds the concepts it may feed.

A concept is named by a term that notes of several sources share, so the terms must be the ones a
reader would name the subject by, found without a model or a part-of-speech tagger:
- a term is a run of one sentence's words between stop words, numbers and punctuation, of at most
  ``MAX_TERM_WORDS`` words, shaped as a name ("Turing machine", "Cam Newton", "NFL") or as a
  noun phrase of two words or more ("decision problem"); a single common word ("problem") is
  never a term: alone it names no subject two sources would share by chance of meaning;
- a capitalised word is a name only where capitals tell it: anywhere but at the start of a
  sentence, or there too when the text capitalises it elsewhere ("Newton was limited…");
- a phrase ending in a past participle ("Broncos defeated") or starting with an adverb is a
  clause's remnant, not a noun phrase;
- a term must recur: twice in the text, or once and in the title; a shorter term that seldom
  occurs outside a longer kept one ("complexity theory" inside "computational complexity
  theory") is the longer one's fragment and is dropped;
- a term of a document's apparatus alone ("Figure", "Table", "Section") is none;
- citations ("Smith et al. (2019)", "[12]") and bibliography entries are not read: an author's
  name is no subject of the text, and a journal's is none either.

``normalize_name`` is the identity of a name: the concepts table is searched by it, so that
"Neural Networks" and "neural  network" are one concept, never two.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import regex

from pipeline.answering.sentences import sentence_spans
from pipeline.textnorm import STOP_WORDS, fold

MAX_TERM_WORDS = 4
# Words that never stand inside a term when written in lower case (in capitals they may begin a
# name: "New England", "Most Valuable Player"). Kept short: a wrong entry silently cuts terms.
_LOWER_STOPS = frozenset(
    "also although among another around became become becomes being between both called could did during each "
    "either even every first following given however including known later latter less like made make makes many more "
    "most much must named neither new next often once one only other others over own particular per rather same second "
    "several shall should since still though three thus together two under until upon use used uses using "
    "usually various very via well within without yet whose whom".split()
)
# A document's apparatus: "Figure 3", "Table 2", "Section 512" are capitalised, so they would pass
# for names, yet a term made of these words alone names no subject.
_APPARATUS = frozenset("appendix chapter eq equation fig figure page part sec section see tab table title".split())
_TOKEN = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:['\u2019\-][\p{L}\p{M}\p{N}]+)*")
# Anything but words, spaces, apostrophes and joining hyphens ends a phrase.
_PHRASE_BREAK = regex.compile(r"[^\p{L}\p{M}\p{N}\s'\u2019\-]+|\s[-\u2013\u2014]+\s")
# Citations inside prose: a parenthesis holding a year with the author(s) just before it
# ("Garey and Johnson (1979)", "(Cook, 1971)"), "Smith et al.", "[12]", "[3, 5–7]".
_AUTHOR = r"\p{Lu}[\p{L}'\u2019\-]+"
_CITATION = regex.compile(
    rf"(?:{_AUTHOR}(?:\s+(?:and|&)\s+{_AUTHOR})?(?:\s+et\s+al\.?)?,?\s*)?\([^()]*\b(?:1[5-9]|20)\d\d[a-z]?\b[^()]*\)"
    rf"|{_AUTHOR}\s+et\s+al\.?|\[\d+(?:\s*[,\u2013-]\s*\d+)*\]"
)
# A block of bibliography entries ("Garey, M. R.; Johnson, D. S. (1979) …"): three such authors.
_LISTED_AUTHOR = regex.compile(r"\b\p{Lu}[\p{L}'\u2019\-]+,\s+(?:\p{Lu}\.\s*){1,3}")
_LISTED_AUTHORS = 3
# A sentence that is a bibliography entry, not a statement.
_REFERENCE_ENTRY = regex.compile(
    r"\bdoi\b|\bisbn\b|\barxiv\b|\bpp?\.\s*\d|\bvol\.\s*\d|\bproc\.|\bproceedings of\b|https?://", regex.IGNORECASE
)
_NAME_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")


@dataclass
class _Term:
    """A term's tally: occurrences in the body and in the claims, where it first appears, and
    the written forms it has (the most frequent is shown)."""

    words: int
    first: int
    count: int = 0
    claimed: int = 0
    forms: Counter[str] = field(default_factory=Counter)


# Words that are their own plural, and end as a plural would.
_SAME_IN_PLURAL = frozenset({"series", "species"})


def normalize_name(name: str) -> str:
    """``name`` as an identity: case and accents folded, punctuation and spacing collapsed to
    single spaces, apostrophes dropped ("Levi's" = "Levis"), and each word's plural "s" folded
    ("networks" = "network", "classes" = "class", "libraries" = "library")."""
    folded = fold(name).replace("'", "").replace("\u2019", "")
    return " ".join(_singular(word) for word in _NAME_WORD.findall(folded))


def mentions(normalized_text: str, normalized_name: str) -> bool:
    """Whether a normalized text says a normalized name, as whole words."""
    return bool(normalized_name) and f" {normalized_name} " in f" {normalized_text} "


def ranked_terms(title: str, body: list[str], claims: list[str], limit: int) -> list[str]:
    """The recurring terms of ``body`` (the texts of a note's blocks), best first: by how often
    the body says them (the ``title`` counts as one more), longer terms weighing more; ties by
    how often the ``claims`` (what the note chose to state) say them, then by first appearance.
    Claims are sentences of the body: counted as weight, a term would count twice for being
    stated. Deterministic."""
    body_sentences = [sentence for text in body for sentence in _sentences(text)]
    names = _names(body_sentences)
    terms: dict[str, _Term] = {}
    position = 0
    for sentences, claimed in ((body_sentences, False), ([s for text in claims for s in _sentences(text)], True)):
        for sentence in sentences:
            for form in _phrases(sentence, names):
                key = normalize_name(form)
                position += 1
                term = terms.setdefault(key, _Term(len(key.split()), position))
                if claimed:
                    term.claimed += 1
                else:
                    term.count += 1
                    term.forms[form] += 1
    title_name = normalize_name(title)
    in_title = {key for key in terms if mentions(title_name, key)}
    recurring = {key: term for key, term in terms.items()
                 if term.count + (key in in_title) >= 2 and not set(key.split()) <= _APPARATUS}
    kept: dict[str, _Term] = {}
    for key, term in sorted(recurring.items(), key=lambda item: -item[1].words):
        containing = [kept[longer].count for longer in kept if kept[longer].words > term.words and mentions(longer, key)]
        if not containing or term.count - max(containing) >= 2:
            kept[key] = term

    def score(key: str) -> tuple[float, int, int, str]:
        term = kept[key]
        weight = term.count + (key in in_title)
        return (-weight * (1 + 0.5 * (term.words - 1)), -term.claimed, term.first, key)

    return [_shown(kept[key]) for key in sorted(kept, key=score)[:limit]]


def _sentences(text: str) -> list[str]:
    """``text``'s sentences with citations cut out, bibliography entries left out."""
    if len(_LISTED_AUTHOR.findall(text)) >= _LISTED_AUTHORS:
        return []
    found = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if not _REFERENCE_ENTRY.search(sentence):
            found.append(_CITATION.sub(" | ", sentence))
    return found


def _names(sentences: list[str]) -> frozenset[str]:
    """Folded words the text capitalises somewhere other than at a sentence's start."""
    names = set()
    for sentence in sentences:
        for token in _TOKEN.findall(sentence)[1:]:
            if token[:1].isupper():
                names.add(fold(token))
    return frozenset(names)


def _phrases(sentence: str, names: frozenset[str]) -> list[str]:
    """Every term-shaped run of words of ``sentence`` (see the module docstring), as written."""
    found: list[str] = []
    initial = True
    for segment in _PHRASE_BREAK.split(sentence):
        run: list[tuple[str, bool]] = []  # (word as shown, is a name)
        for token in _TOKEN.findall(segment) + [""]:
            kind = _kind(token, initial, names) if token else None
            if token:
                initial = False
            if kind is None:
                found.extend(_grams(run))
                run = []
            else:
                run.append((token if kind == "name" else token[:1].lower() + token[1:], kind == "name"))
    return found


def _kind(token: str, initial: bool, names: frozenset[str]) -> str | None:
    """A token as part of a term: a "name", a common "word", or None where a term must end (a
    stop word, a number, a single letter)."""
    folded = fold(token)
    if folded in STOP_WORDS or len(folded) < 2 or any(char.isdigit() for char in token):
        return None
    if (token[:1].isupper() and (not initial or folded in names)) or (len(token) > 1 and token.isupper()):
        return "name"
    return None if folded in _LOWER_STOPS else "word"


def _grams(run: list[tuple[str, bool]]) -> list[str]:
    """The runs of ``run`` that are shaped as terms: names, or names then at least one common
    word ("Turing machine"), never a common word before a name ("quarterback Cam")."""
    grams = []
    for start in range(len(run)):
        for end in range(start + 1, min(start + MAX_TERM_WORDS, len(run)) + 1):
            words = run[start:end]
            flags = [is_name for _, is_name in words]
            common = flags.index(False) if False in flags else len(flags)
            if any(flags[common:]):
                continue
            if common < len(flags) and (len(words) < 2 or _clause_remnant(words[0][0], words[-1][0], common)):
                continue
            grams.append(" ".join(word for word, _ in words))
    return grams


def _clause_remnant(first: str, last: str, common: int) -> bool:
    """A phrase ending in a past participle ("Broncos defeated") or opening with an adverb
    ("closely related fields") is part of a clause, not a noun phrase."""
    participle = len(last) > 4 and last.endswith("ed") and not last.endswith("eed")
    return participle or (common == 0 and len(first) > 4 and first.endswith("ly"))


def _shown(term: _Term) -> str:
    """The form the body writes the term in most often (the first of equals)."""
    return max(term.forms.items(), key=lambda item: item[1])[0]


def _singular(word: str) -> str:
    if word in _SAME_IN_PLURAL:
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("sses"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
