"""Citation markers, their validation against the turn's evidence, and fuzzy quote location."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.answering.citations import (
    MarkerFilter,
    best_quote,
    extract_markers,
    locate_quote,
    validated_citations,
)
from pipeline.answering.sentences import content_terms, sentence_spans
from pipeline.answering.types import EvidenceItem, ToolRegistry, ToolSpec

CHUNK = (
    "The Digital Millennium Copyright Act (DMCA) was signed into law by President Clinton on "
    "October 28, 1998. The legislation implements two 1996 World Intellectual Property "
    "Organization (WIPO) treaties. Título V crée une protection des coques de navires."
)
SEEN_A = "ch_00000000000000000aaa"
SEEN_B = "ch_00000000000000000bbb"
INVENTED = "ch_de4dbeefde4dbeef0bad"


def registry_with(*chunk_ids: str) -> ToolRegistry:
    items = [EvidenceItem(chunk_id, "rev", "res", "src", CHUNK, {"page": 1}) for chunk_id in chunk_ids]
    registry = ToolRegistry([ToolSpec("search_notebook", "", {"type": "object", "properties": {}}, lambda: items)])
    registry.call("search_notebook", {})
    return registry


def test_locate_quote_ignores_case_spaces_punctuation_and_accents() -> None:
    start, end = locate_quote(CHUNK, "signed into law by president   clinton on october 28 1998")
    assert CHUNK[start:end] == "signed into law by President Clinton on October 28, 1998"
    start, end = locate_quote(CHUNK, "titulo v cree une protection")
    assert CHUNK[start:end] == "Título V crée une protection"


def test_locate_quote_tolerates_small_differences_but_not_other_text() -> None:
    span = locate_quote(CHUNK, "The legislation implement two 1996 World Intelectual Property Organisation treaties")
    assert span is not None
    assert CHUNK[span[0] : span[1]].startswith("The legislation implements two 1996")
    assert locate_quote(CHUNK, "The act was vetoed by the Senate in 2004.") is None
    assert locate_quote(CHUNK, "...") is None
    assert locate_quote("", "anything") is None


def test_extract_markers_reads_ids_numbers_groups_and_bare_ids_once() -> None:
    text = f"A [{SEEN_A}]. B [1][{SEEN_B}, 2]. C {INVENTED} and again [{SEEN_A}]; not a marker: [note]."
    assert extract_markers(text) == [SEEN_A, "1", SEEN_B, "2", INVENTED]


def test_invented_ids_are_dropped_and_numbers_become_chunk_ids() -> None:
    registry = registry_with(SEEN_A, SEEN_B)

    cited = validated_citations(
        f"Clinton signed it [{SEEN_A}] [{INVENTED}]. It implements two WIPO treaties [2]. Made up {INVENTED}.",
        registry,
    )

    assert cited.text == f"Clinton signed it [{SEEN_A}]. It implements two WIPO treaties [{SEEN_B}]. Made up."
    assert [c["chunk_id"] for c in cited.citations] == [SEEN_A, SEEN_B]
    assert all(c["quote"] in CHUNK for c in cited.citations)
    assert "Clinton" in cited.citations[0]["quote"] and "treaties" in cited.citations[1]["quote"]


def test_a_group_marker_keeps_only_its_valid_ids() -> None:
    cited = validated_citations(f"Signed in 1998 [{INVENTED}, {SEEN_A}, 7].", registry_with(SEEN_A))

    assert cited.text == f"Signed in 1998 [{SEEN_A}]."
    assert len(cited.citations) == 1


def test_best_quote_prefers_a_quoted_passage_then_the_claim_then_shared_terms() -> None:
    assert best_quote(CHUNK, 'The summary says it was "signed into law by President Clinton".') == (
        "signed into law by President Clinton"
    )
    assert best_quote(CHUNK, "It implements two WIPO treaties from 1996.") == (
        "The legislation implements two 1996 World Intellectual Property Organization (WIPO) treaties."
    )


@given(st.lists(st.integers(min_value=0, max_value=120), max_size=8))
def test_streamed_rewrite_equals_rewrite_of_the_whole_text(cuts: list[int]) -> None:
    text = (
        f"Clinton signed it [{SEEN_A}] [{INVENTED}]. Two treaties [2],[1] and {INVENTED} or {SEEN_B}. "
        f"An open [bracket that never closes, and [{SEEN_B}] after it."
    )
    registry = registry_with(SEEN_A, SEEN_B)
    marker_filter = MarkerFilter(registry)
    pieces, previous = [], 0
    for cut in sorted(cuts) + [len(text)]:
        pieces.append(marker_filter.feed(text[previous:cut]))
        previous = max(previous, cut)
    streamed = "".join(pieces) + marker_filter.flush()

    whole = MarkerFilter(registry)
    assert streamed == whole.feed(text) + whole.flush()
    assert INVENTED not in streamed


def test_sentences_survive_abbreviations_and_initials() -> None:
    text = "The U.S. Copyright Office wrote it. Dr. J. Smith agreed, approx. five times.\nNew line here"
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "The U.S. Copyright Office wrote it.",
        "Dr. J. Smith agreed, approx. five times.",
        "New line here",
    ]


def test_a_heading_run_into_a_sentence_ends_before_it_and_an_acronym_does_not() -> None:
    text = ("1998 INTRODUCTION The Act was signed. TITLE II: ONLINE LIABILITY LIMITATION Title II adds a section. "
            "FBI Director Wray testified. NASA Administrator Nelson agreed.")
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "1998 INTRODUCTION",
        "The Act was signed.",
        "TITLE II: ONLINE LIABILITY LIMITATION",
        "Title II adds a section.",
        "FBI Director Wray testified.",
        "NASA Administrator Nelson agreed.",
    ]


def test_overlong_sentences_are_cut_into_windows_of_exact_text() -> None:
    text = "word " * 300
    spans = sentence_spans(text)
    assert len(spans) > 1 and all(
        end - start <= 400 and text[start:end].strip() == text[start:end] for start, end in spans
    )


def test_content_terms_fold_accents_drop_stop_words_and_stem() -> None:
    assert content_terms("What did the Académie FOUNDED in the founding years?") == [
        "academi",
        "found",
        "found",
        "year",
    ]


def test_a_claim_its_chunk_does_not_support_is_marked_unverified_and_cites_nothing() -> None:
    registry = registry_with(SEEN_A, SEEN_B)
    cited = validated_citations(
        f"President Clinton signed the DMCA in 1998 [{SEEN_A}]. The moon is made of green cheese [{SEEN_B}].",
        registry,
    )
    assert cited.text == (
        f"President Clinton signed the DMCA in 1998 [{SEEN_A}]. The moon is made of green cheese [unverified]."
    )
    assert [c["chunk_id"] for c in cited.citations] == [SEEN_A] and cited.dropped == 1
    assert all(c["quote"] in CHUNK for c in cited.citations), "every shown quote occurs in its chunk"
    assert validated_citations(f"[{SEEN_A}] starts the answer.", registry).dropped == 1, "no claim, no support"
