"""The pure logic of concepts on real text: notes made of SQuAD paragraphs. Two sources on one
subject, A (slides: paragraphs 3–7 of "Computational complexity theory") and B (a paper:
paragraphs 6–11, quoting A's definition of a decision problem almost word for word), and C on
another subject (the 1973 oil crisis). Terms A shares with B found concepts, and only those; a
later note naming a concept supplements it; code checks every decision; a module quotes both
sources' claims with their evidence, once each."""
from __future__ import annotations

import json
from dataclasses import replace
from functools import cache

import pytest

from pipeline.answering.sentences import sentence_spans
from pipeline.knowledge.concepts import (
    MAX_CANDIDATES,
    MAX_DECISIONS,
    MAX_POINTS,
    Candidate,
    ContributionInput,
    Decision,
    NoteInput,
    OfflineConceptEngine,
    candidates_for,
    inputs_key,
    key_terms,
    normalize_name,
    validate,
)
from pipeline.textnorm import STOP_WORDS, fold
from support.services import CORPUS

COMPLEXITY, OIL_CRISIS = 4, 13
ENGINE = OfflineConceptEngine()


@cache
def paragraphs(article: int) -> dict[int, str]:
    """An article's paragraphs by index."""
    found = {}
    for line in (CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["metadata"]["article_index"] == article:
            found[row["metadata"]["paragraph_index"]] = row["text"]
    return found


def note(name: str, title: str, texts: list[str], *, bare: tuple[int, ...] = (), version: str = "1") -> NoteInput:
    """A note whose blocks are ``texts``; each block's first two sentences are claims with their
    own sentence as evidence, except the blocks ``bare`` (no claim, so no evidence)."""
    blocks, claims, evidence = [], [], []
    for index, text in enumerate(texts):
        key = f"b{index + 1}"
        blocks.append({"key": key, "kind": "paragraph", "text": text, "human_revised": False})
        if index in bare:
            continue
        for start, end in sentence_spans(text)[:2]:
            claim = f"c{len(claims) + 1}"
            claims.append({"key": claim, "text": text[start:end], "block_key": key})
            evidence.append({"claim_key": claim, "block_key": key, "block_ordinal": 10 + index, "page": 1 + index // 2,
                             "page_label": None, "snippet": text[start:end]})
    return NoteInput(f"note-{name}", f"nv-{name}-{version}", f"sv-{name}", title, claims[0]["text"] if claims else "",
                     tuple(blocks), tuple(claims), tuple(evidence))


def source_a() -> NoteInput:
    """Slides on problems and instances; their last paragraph (an example) states no claim."""
    texts = paragraphs(COMPLEXITY)
    return note("a", "Problems in computational complexity theory", [texts[i] for i in range(3, 8)], bare=(4,))


def source_b() -> NoteInput:
    """A paper restating A's definition with one word changed, then function problems and time."""
    texts = dict(paragraphs(COMPLEXITY))
    texts[6] = texts[6].replace("the central objects", "the main objects")
    return note("b", "Decision and function problems", [texts[i] for i in range(6, 12)])


def source_c() -> NoteInput:
    texts = paragraphs(OIL_CRISIS)
    return note("c", "1973 oil crisis", [texts[i] for i in range(0, 4)])


def shared(*notes: NoteInput) -> set[str]:
    return {normalize_name(term) for n in notes for term in key_terms(n)}


def test_normalize_name_folds_case_accents_spacing_and_plurals() -> None:
    assert normalize_name("Neural Networks") == normalize_name("neural  network") == "neural network"
    assert normalize_name("Théorème  de Bayes") == "theoreme de baye" == normalize_name("theoreme de Bayes")
    assert normalize_name("Levi's Stadium") == normalize_name("Levis stadium")
    assert normalize_name("back-propagation") == "back propagation"
    assert normalize_name("classes") == normalize_name("class") == "class"
    assert normalize_name("analysis") == "analysis" and normalize_name("status") == "status"
    assert normalize_name("Digital Libraries") == normalize_name("digital library") == "digital library"
    assert normalize_name("time series") == "time series" and normalize_name("ties") == "tie"


def test_key_terms_are_recurring_phrases_and_names_best_first() -> None:
    a = source_a()
    terms = key_terms(a)
    assert terms[:2] == ["decision problem", "computational problem"]
    assert "formal language" in terms and "computational complexity theory" in terms
    assert "complexity theory" not in terms, "a fragment of a longer term that never stands alone"
    assert len(key_terms(a, limit=3)) == 3 and key_terms(a) == terms, "deterministic"
    super_bowl = note("sb", "Super Bowl 50", list(paragraphs(0).values())[:4])
    names = key_terms(super_bowl, limit=12)
    assert names[0] == "Super Bowl" and {"NFL", "Broncos", "regular season"} <= set(names)
    for term in terms + names:
        words = term.split()
        assert not any(char.isdigit() for char in term)
        assert fold(words[0]) not in STOP_WORDS and fold(words[-1]) not in STOP_WORDS
        assert len(words) >= 2 or words[0][0].isupper(), f"a single common word is no term: {term}"


def test_citations_and_reference_lists_give_no_terms() -> None:
    texts = paragraphs(COMPLEXITY)
    cited = [
        texts[6] + " Garey and Johnson (1979) list many such problems, as Karp et al. showed [12].",
        texts[7] + " The same holds for every decision problem in Garey and Johnson (1979) and Karp et al. [3, 5].",
        "Garey, M. R.; Johnson, D. S. (1979). Computers and Intractability. Freeman. "
        "Karp, R. M. (1972). Reducibility among combinatorial problems. Plenum. "
        "Cook, S. A. (1971). The complexity of theorem proving procedures. Computers and Intractability.",
    ]
    terms = key_terms(note("cited", "Decision problems", cited), limit=20)
    assert "decision problem" in terms
    assert not any(name in term for term in terms for name in ("Garey", "Johnson", "Karp", "Computers", "Intractability"))


def test_candidates_are_the_concepts_the_note_names_at_most_eight() -> None:
    a = source_a()
    concepts = [Candidate("k-bowl", "Super Bowl", (), ("overview",)), Candidate("k-turing", "Turing machine", (), ())]
    concepts += [Candidate(f"k-{n}-{i}", term.upper() if i else term, (), ()) for n, term in enumerate(key_terms(a))
                 for i in range(2)]
    concepts += [Candidate("k-decision", "Entscheidungsproblem", ("Decision Problems",), ("overview",)),
                 Candidate("k-complexity", "complexity", (), ())]
    found = candidates_for(a, concepts)
    assert len(found) == MAX_CANDIDATES
    assert [c.concept_id for c in found[:3]] == ["k-0-0", "k-0-1", "k-decision"], "best term first, by name or alias"
    assert not {"k-bowl", "k-turing"} & {c.concept_id for c in found}
    assert len(candidates_for(a, concepts, limit=20)) == MAX_CANDIDATES
    titled = candidates_for(a, [Candidate("k-bowl", "Super Bowl", (), ()), Candidate("k-complexity", "complexity", (), ())])
    assert [c.concept_id for c in titled] == ["k-complexity"], "its title names it, no key term does"
    assert candidates_for(source_c(), concepts) == []


def test_a_shared_term_founds_a_concept_only_when_another_source_has_it() -> None:
    a, b, c = source_a(), source_b(), source_c()
    assert ENGINE.decide(a, [], set()) == [], "one source alone founds nothing"
    assert ENGINE.decide(a, [], shared(c)) == [], "C shares no term with A"
    decisions = ENGINE.decide(a, [], shared(b))
    assert [d.concept_name for d in decisions][:2] == ["Decision problem", "Computational problem"]
    assert {d.kind for d in decisions} == {"new_concept"} and {d.module_key for d in decisions} == {"overview"}
    texts = {block["key"]: block["text"].lower() for block in a.blocks}
    for decision in decisions:
        assert decision.concept_id is None and decision.block_keys
        assert all(decision.concept_name.lower() in texts[key] for key in decision.block_keys)
        assert "b5" not in decision.block_keys, "b5 says 'decision problem' but carries no evidence"
    assert validate(a, [], decisions) == (decisions, [])
    assert ENGINE.decide(a, [], shared(b)) == decisions, "deterministic"


def test_a_later_note_naming_an_existing_concept_supplements_it() -> None:
    b = source_b()
    concepts = [Candidate("k-decision", "Decision problem", ("decision problems",), ("overview", "examples")),
                Candidate("k-computational", "Computational problem", (), ()),
                Candidate("k-turing", "Turing machine", (), ("overview",))]
    offered = candidates_for(b, concepts)
    assert {c.concept_id for c in offered} == {"k-decision", "k-computational"}
    decisions = ENGINE.decide(b, offered, set())
    by_concept = {d.concept_id: d for d in decisions}
    assert by_concept["k-decision"].kind == "supplement" and by_concept["k-decision"].module_key == "overview"
    assert by_concept["k-computational"].kind == "new_module" and by_concept["k-computational"].module_title == "Overview"
    assert len(decisions) == 2, "no shared terms: nothing new is founded"
    assert validate(b, offered, decisions) == (decisions, [])


def test_never_more_than_three_decisions() -> None:
    a = source_a()
    everything = shared(a)
    decisions = ENGINE.decide(a, [], everything)
    assert len(decisions) == MAX_DECISIONS
    extra = [Decision("new_concept", None, term, "overview", "Overview", ("b1",)) for term in ("input string", "formal language")]
    kept, problems = validate(a, [], decisions + extra)
    assert kept == decisions and problems == [f"2 decisions beyond {MAX_DECISIONS} left out"]


def test_validate_drops_what_code_cannot_accept() -> None:
    a = source_a()
    offered = [Candidate("k-decision", "Decision problem", (), ("overview",))]
    kept, problems = validate(a, offered, [
        Decision("supplement", "k-elsewhere", "Turing machine", "overview", "Overview", ("b1",)),
        Decision("supplement", "k-decision", "Decision problem", "overview", "Overview", ("b4", "b99", "b5", "b4")),
        Decision("new_module", "k-decision", "Decision problem", "variants", "Variants", ("b5", "b7")),
    ])
    assert kept == [Decision("supplement", "k-decision", "Decision problem", "overview", "Overview", ("b4",))]
    assert any("k-elsewhere is not a candidate" in p for p in problems)
    assert any("no block b99" in p for p in problems) and any("block b5 carries no evidence" in p for p in problems)
    assert any("decision 3 (new_module) dropped: no block with evidence" in p for p in problems)

    kept, problems = validate(a, offered, [
        Decision("new_concept", None, "decision problems", "overview", "Overview", ("b4",)),
        Decision("merge", None, "Formal language", "overview", "Overview", ("b4",)),
        Decision("supplement", "k-decision", "Decision problem", "history", "History", ("b4",)),
    ])
    assert kept == [] and len(problems) == 3
    assert "k-decision's" in problems[0] and "unknown kind 'merge'" in problems[1] and "'history'" in problems[2]

    kept, problems = validate(a, offered, [
        Decision("new_module", "k-decision", "Decision problem", "overview", "Overview", ("b4",)),
        Decision("conflict", "k-decision", "Decision problem", "overview", "Overview", ()),
        Decision("new_concept", None, "Formal language", "overview", "Overview", ("b4",)),
    ])
    assert [d.kind for d in kept] == ["conflict", "new_concept"], "a conflict is kept for review, with no block"
    assert problems == ["decision 1 (new_module) dropped: module 'overview' exists already"]


def contributions(*notes: NoteInput, blocks: dict[str, tuple[str, ...]] | None = None) -> list[ContributionInput]:
    """Each note's contribution of ``blocks[note_id]`` (all its blocks unless said)."""
    return [ContributionInput(f"k-{n.note_id}", n.note_version_id, n.source_version_id,
                              (blocks or {}).get(n.note_id, tuple(b["key"] for b in n.blocks)), n) for n in notes]


def test_a_module_quotes_both_sources_once_each_with_evidence() -> None:
    a, b = source_a(), source_b()
    inputs = contributions(a, b, blocks={a.note_id: ("b4", "b5"), b.note_id: ("b1", "b3", "b4")})
    body = ENGINE.build_module("Decision problem", inputs)
    assert {point["note_id"] for point in body} == {a.note_id, b.note_id}
    b_texts = [point["text"] for point in body if point["note_id"] == b.note_id]
    assert not any(text.startswith("Decision problems are one of the") for text in b_texts), "said by A already"
    claims = {(n.note_version_id, c["key"]): c for n in (a, b) for c in n.claims}
    for point in body:
        claim = claims[(point["note_version_id"], point["claim_key"])]
        assert point["text"] == claim["text"] and point["block_key"] == claim["block_key"]
        assert point["evidence"] and all(e["claim_key"] == point["claim_key"] and e["snippet"] == point["text"]
                                         for e in point["evidence"])
    assert [p["note_id"] for p in body] == sorted((p["note_id"] for p in body), key=[a.note_id, b.note_id].index)
    assert all(point["block_key"] != "b5" for point in body if point["note_id"] == a.note_id), "b5 has no claim"
    assert ENGINE.build_module("Decision problem", inputs) == body, "deterministic"


def test_a_long_module_is_capped_and_hears_every_source() -> None:
    a, b, c = source_a(), source_b(), source_c()
    body = ENGINE.build_module("Overview", contributions(a, b, c))
    assert len(body) == MAX_POINTS
    assert {point["note_id"] for point in body} == {a.note_id, b.note_id, c.note_id}
    texts = [fold(point["text"]) for point in body]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("change", ["version", "blocks"])
def test_inputs_key_names_exactly_the_inputs(change: str) -> None:
    a, b = source_a(), source_b()
    inputs = contributions(a, b, blocks={a.note_id: ("b1", "b4"), b.note_id: ("b2",)})
    key = inputs_key(inputs)
    shuffled = [replace(inputs[1]), replace(inputs[0], block_keys=("b4", "b1"), contribution_id="other")]
    assert inputs_key(shuffled) == key and len(key) == 64
    if change == "version":  # the same text uploaded again is a new note version: a new input
        changed = [inputs[0], replace(inputs[1], note_version_id="nv-b-2")]
    else:
        changed = [inputs[0], replace(inputs[1], block_keys=("b2", "b3"))]
    assert inputs_key(changed) != key


def test_the_document_apparatus_is_no_term() -> None:
    text = ("Figure 2 shows the cache. Table 1 lists the hits and Figure 3 the misses. "
            "Section 4 explains the cache policy, and Section 5 the cache policy's cost.")
    terms = key_terms(note("fig", "Caches", [text]))
    assert "cache policy" in terms
    assert not {"Figure", "Table", "Section"} & set(terms)
