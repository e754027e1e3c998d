"""Tests of the chunker on real PDF pages (read with PDFium directly) and on edge-case text."""
from __future__ import annotations

import re
from pathlib import Path

import pypdfium2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.chunker import Chunk, ChunkSettings, chunk_segments, make_chunk_id
from pipeline.types import Segment

FINGERPRINT = "sha256:0123456789abcdef"
# Any character, plus the ones the chunker treats specially (lone surrogates are excluded by default).
TRICKY_CHARACTERS = st.one_of(
    st.characters(),
    st.sampled_from([" ", "\n", "\r", "\ufffe", "\u00ad", "\u200b", "\ud800", "\u0301", "。", ".", "中", "，"]),
)


def pdf_pages(path: Path) -> list[Segment]:
    document = pypdfium2.PdfDocument(path)
    try:
        return [
            Segment(document[index].get_textpage().get_text_range(), {"page": index + 1})
            for index in range(len(document))
        ]
    finally:
        document.close()


def squash(text: str) -> str:
    """Text without blanks and invisible characters, to compare content across normalisation."""
    text = re.sub(r"[\ud800-\udfff]", "\ufffd", text)
    return re.sub(r"[\s\x00-\x08\x0e-\x1b\x7f\u00ad\u200b\ufeff\ufffe\uffff]+", "", text)


def assert_well_formed(chunks: list[Chunk], segments: list[Segment], max_chars: int) -> None:
    """Sizes, ordinals, ids, offsets that point back at the chunk's text, and nothing lost.

    ``segments`` must have distinct locators (no merging), so offsets index one segment's text.
    """
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    covered: dict[int, set[int]] = {id(segment): set() for segment in segments}
    for chunk in chunks:
        assert 0 < len(chunk.text) <= max_chars
        assert chunk.text == chunk.text.strip() and "  " not in chunk.text
        assert re.fullmatch(r"ch_[0-9a-f]{20}", chunk.chunk_id)
        [source] = [s for s in segments if s.locator.items() <= chunk.locator.items()]
        start, end = chunk.locator["char_start"], chunk.locator["char_end"]
        assert squash(source.text[start:end]) == squash(chunk.text)
        covered[id(source)].update(range(start, end))
    for segment in segments:
        assert all(i in covered[id(segment)] for i, char in enumerate(segment.text) if squash(char))


def test_real_pdf_pages_are_chunked_per_page_at_sentence_ends(corpus_dir: Path) -> None:
    pages = pdf_pages(corpus_dir / "pdf" / "tracemonkey.pdf")[:3]
    chunks = chunk_segments(pages, source_fingerprint=FINGERPRINT, settings=ChunkSettings(800, 150))

    assert_well_formed(chunks, pages, 800)
    by_page = {p.locator["page"]: [c for c in chunks if c.locator["page"] == p.locator["page"]] for p in pages}
    for page in pages:
        page_chunks = by_page[page.locator["page"]]
        assert page_chunks, "every page with text yields chunks"
        assert set(page_chunks[0].locator) == {"page", "char_start", "char_end"}
    inner_ends = [chunk.text[-1] for page_chunks in by_page.values() for chunk in page_chunks[:-1]]
    assert sum(end in ".!?" for end in inner_ends) >= 0.8 * len(inner_ends)
    # PDFium's hyphenation marker (U+FFFE) is removed and the word is joined again.
    assert all("\ufffe" not in chunk.text for chunk in chunks)
    assert any("compile than statically typed" in chunk.text for chunk in by_page[1])


def test_sentence_cut_at_a_boundary_is_found_whole_in_a_neighbour() -> None:
    sentences = [f"Sentence number {i} talks about topic {i} at some length." for i in range(60)]
    text = " ".join(sentences)
    chunks = chunk_segments([Segment(text, {"offset": 0})], source_fingerprint=FINGERPRINT, settings=ChunkSettings(300, 150))

    assert len(chunks) > 5
    for sentence in sentences:
        assert any(sentence in chunk.text for chunk in chunks)


def test_long_paragraph_without_punctuation_is_cut_between_words_with_overlap() -> None:
    vocabulary = [f"word{i}" for i in range(500)]
    text = " ".join(vocabulary[(i * 7) % 500] for i in range(3000))
    segments = [Segment(text, {"offset": 0})]
    chunks = chunk_segments(segments, source_fingerprint=FINGERPRINT, settings=ChunkSettings(500, 80))

    assert_well_formed(chunks, segments, 500)
    known = set(vocabulary)
    for chunk in chunks:
        assert set(chunk.text.split()) <= known, "no word is cut in two"
    for before, after in zip(chunks, chunks[1:]):
        overlap = before.locator["char_end"] - after.locator["char_start"]
        assert 0 < overlap <= 80
        assert before.text.endswith(text[after.locator["char_start"] : before.locator["char_end"]])


def test_text_without_any_space_is_cut_hard() -> None:
    text = "x" * 2500
    chunks = chunk_segments([Segment(text, {"offset": 0})], source_fingerprint=FINGERPRINT, settings=ChunkSettings(1000, 150))

    assert [len(c.text) for c in chunks][0] == 1000
    assert all(len(c.text) <= 1000 for c in chunks)
    assert chunks[-1].locator["char_end"] == 2500


def test_cjk_page_is_cut_at_full_stops_without_spurious_spaces(corpus_dir: Path) -> None:
    pages = pdf_pages(corpus_dir / "pdf" / "chemistry-notation-zh.pdf")
    chunks = chunk_segments(pages, source_fingerprint=FINGERPRINT, settings=ChunkSettings(200, 40))

    assert_well_formed(chunks, pages, 200)
    assert len(chunks) > 10
    inner_ends = [chunk.text[-1] for chunk in chunks[:-1]]
    assert sum(end == "。" for end in inner_ends) >= 0.7 * len(inner_ends)
    # A PDF line wrap between two Chinese characters must not insert a space.
    joined = " ".join(chunk.text for chunk in chunks)
    assert "是用化学式来描述各种物质之间" in joined
    assert not re.search(r"[\u4e00-\u9fff] [\u4e00-\u9fff]{2}", chunks[0].text)


def test_chunks_never_span_locators_and_equal_neighbours_merge() -> None:
    segments = [
        Segment("Alpha one.", {"page": 1}),
        Segment("Alpha two.", {"page": 1}),
        Segment("Beta.", {"page": 2}),
        Segment("   \n ", {"page": 3}),
        Segment("Gamma.", {"page": 1}),
    ]
    chunks = chunk_segments(segments, source_fingerprint=FINGERPRINT)

    assert [(c.text, c.locator["page"]) for c in chunks] == [
        ("Alpha one.\nAlpha two.", 1),
        ("Beta.", 2),
        ("Gamma.", 1),
    ]


def test_whitespace_is_normalised_but_paragraphs_survive() -> None:
    text = "  First   line\r\nwraps here.\r\n\r\n\tSecond\u00a0paragraph  \n"
    [chunk] = chunk_segments([Segment(text, {"offset": 0})], source_fingerprint=FINGERPRINT)

    assert chunk.text == "First line wraps here.\nSecond paragraph"
    assert chunk.locator == {"offset": 0, "char_start": 2, "char_end": len(text.rstrip())}


def test_chunk_ids_are_deterministic_and_content_addressed(corpus_dir: Path) -> None:
    pages = pdf_pages(corpus_dir / "pdf" / "tracemonkey.pdf")[:2]
    first = chunk_segments(pages, source_fingerprint=FINGERPRINT)
    reread = pdf_pages(corpus_dir / "pdf" / "tracemonkey.pdf")[:2]
    again = chunk_segments(reread, source_fingerprint=FINGERPRINT)
    other = chunk_segments(pages, source_fingerprint="sha256:other")

    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    assert len({c.chunk_id for c in first}) == len(first)
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in other}
    # Pinned: BLAKE2b gives this on every machine, so stored citations keep resolving.
    assert make_chunk_id(FINGERPRINT, 3, "Hello, world.") == "ch_50aaf47a1a03baa46e15"


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_segments([], source_fingerprint="")
    with pytest.raises(ValueError):
        chunk_segments([], source_fingerprint=FINGERPRINT, settings=ChunkSettings(100, 100))
    assert chunk_segments([], source_fingerprint=FINGERPRINT) == []


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(TRICKY_CHARACTERS, max_size=400), min_size=1, max_size=4),
    max_chars=st.integers(min_value=1, max_value=120),
    data=st.data(),
)
def test_any_text_gives_bounded_chunks_that_point_back_at_their_text(
    texts: list[str], max_chars: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=max_chars - 1))
    segments = [Segment(text, {"page": index}) for index, text in enumerate(texts)]
    chunks = chunk_segments(
        segments, source_fingerprint=FINGERPRINT, settings=ChunkSettings(max_chars, overlap)
    )

    assert_well_formed(chunks, segments, max_chars)
    for chunk in chunks:
        chunk.text.encode("utf-8")  # storable: no lone surrogates


def test_a_transcript_is_chunked_at_segment_boundaries_with_its_time_range() -> None:
    """Whole stretches of speech per chunk, overlapping by whole segments; a chunk's range runs
    from its first segment's start to its last one's end, and a change of language starts a chunk."""
    said = [f"Sentence {n} is said here." for n in range(6)]
    segments = [
        Segment(text, {"start": 2.0 * n, "end": 2.0 * n + 1.5, "transcript": "base", "language": "en" if n < 5 else "de"})
        for n, text in enumerate(said)
    ]
    chunks = chunk_segments(segments, source_fingerprint=FINGERPRINT, settings=ChunkSettings(60, 30))
    assert [(c.text, c.locator["start"], c.locator["end"], c.locator["language"]) for c in chunks] == [
        (f"{said[0]} {said[1]}", 0.0, 3.5, "en"),
        (f"{said[1]} {said[2]}", 2.0, 5.5, "en"),
        (f"{said[2]} {said[3]}", 4.0, 7.5, "en"),
        (f"{said[3]} {said[4]}", 6.0, 9.5, "en"),
        (said[5], 10.0, 11.5, "de"),
    ]
    assert all(set(c.locator) == {"start", "end", "transcript", "language", "spoken"} for c in chunks)
    first = len(said[0])
    assert chunks[0].locator["spoken"] == [[0, first, 0.0, 1.5], [first + 1, first + 1 + len(said[1]), 2.0, 3.5]]
    assert [chunks[0].text[a:b] for a, b, _, _ in chunks[0].locator["spoken"]] == said[:2]


def test_a_segment_of_speech_longer_than_a_chunk_is_cut_and_keeps_its_range() -> None:
    long = " ".join(f"word{n}" for n in range(60))
    chunks = chunk_segments([Segment(long, {"start": 3.0, "end": 33.0})], source_fingerprint=FINGERPRINT, settings=ChunkSettings(100, 20))
    assert len(chunks) > 3 and all(len(c.text) <= 100 and (c.locator["start"], c.locator["end"]) == (3.0, 33.0) for c in chunks)


def test_a_transcript_chunk_never_only_repeats_the_one_before() -> None:
    """Ten short segments, then one that fills a chunk alone: the overlap would leave it no room,
    so the next chunk starts with it (a chunk of repeats adds nothing but duplicate hits)."""
    short = [Segment(f"Short {n:02d}.", {"start": float(n), "end": n + 0.9}) for n in range(10)]
    long = Segment("L" * 95, {"start": 10.0, "end": 20.0})
    chunks = chunk_segments([*short, long], source_fingerprint=FINGERPRINT, settings=ChunkSettings(100, 30))
    assert [c.text for c in chunks] == [" ".join(s.text for s in short), long.text]
