"""The offline analysis engine on real text (SQuAD's Wikipedia articles, one resource each): bounded
batches, points quoted exactly from their chunk, no repeats, results that span the sources, and
the kinds and instructions steering what is quoted."""
from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from pipeline.analysis.batches import BatchBounds, batches
from pipeline.analysis.offline import map_batch, ordered, reduce_summaries
from pipeline.analysis.types import Focus, Passage, Summary
from support.services import CORPUS

ARTICLES = ("Super Bowl 50", "Nikola Tesla", "Martin Luther", "Chloroplast", "Doctor Who", "Normans", "Amazon rainforest")


def _passages() -> dict[str, list[Passage]]:
    by_article: dict[str, list[Passage]] = defaultdict(list)
    for line in (CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl").open(encoding="utf-8"):
        document = json.loads(line)
        if document["title"] in ARTICLES:
            chunks = by_article[document["title"]]
            chunks.append(Passage(document["_id"], document["title"], document["text"], ordinal=len(chunks)))
    return by_article


PASSAGES = _passages()
TEXT_OF = {passage.chunk_id: passage.text for chunks in PASSAGES.values() for passage in chunks}


def _analyse(passages: list[Passage], focus: Focus, bounds: BatchBounds = BatchBounds(max_items=12, max_chars=12_000)) -> Summary:
    level = [map_batch(batch, focus, points=6) for batch in batches(passages, lambda p: len(p.text), bounds)]
    while len(level) > 1:
        groups = batches(level, lambda s: sum(len(p.text) for p in s.points), bounds)
        level = [reduce_summaries(group, focus, points=10) for group in groups]
    return level[0]


def test_batches_keep_order_and_both_bounds() -> None:
    sizes = [5, 5, 5, 9, 1, 1, 1, 1, 1]
    cut = batches(sizes, lambda size: size, BatchBounds(max_items=3, max_chars=12))
    assert cut == [[5, 5], [5], [9, 1, 1], [1, 1, 1]]
    with pytest.raises(ValueError):
        batches([13], lambda size: size, BatchBounds(max_items=3, max_chars=12))


def test_every_point_is_a_sentence_quoted_exactly_from_the_chunk_it_cites() -> None:
    summary = map_batch(PASSAGES["Super Bowl 50"][:12], Focus(), points=8)
    assert 5 <= len(summary.points) <= 8
    for point in summary.points:
        [chunk_id] = point.chunk_ids
        assert point.text in TEXT_OF[chunk_id]
    assert summary.covers == tuple(passage.chunk_id for passage in PASSAGES["Super Bowl 50"][:12])


def test_near_repeats_are_quoted_once() -> None:
    twice = PASSAGES["Nikola Tesla"][:6] + [Passage(f"copy-{p.chunk_id}", p.resource_id, p.text, p.ordinal) for p in PASSAGES["Nikola Tesla"][:6]]
    texts = [point.text for point in map_batch(twice, Focus(), points=10).points]
    assert len(texts) == len(set(texts))


def test_a_whole_notebook_result_spans_its_sources() -> None:
    everything = [passage for article in ARTICLES for passage in PASSAGES[article][:20]]
    result = _analyse(everything, Focus())
    cited = {point.resource_id for point in result.points}
    assert len(result.points) == 10 and len(cited) >= 6, [(p.resource_id, p.text[:60]) for p in result.points]
    assert set(result.covers) == {passage.chunk_id for passage in everything}
    assert result == _analyse(everything, Focus()), "the offline engine is deterministic"


def test_a_timeline_quotes_dated_sentences_in_date_order() -> None:
    result = _analyse([p for article in ("Normans", "Martin Luther") for p in PASSAGES[article][:25]], Focus("timeline"))
    years = [re.search(r"\b1\d{3}\b", point.text) for point in ordered(result, Focus("timeline"))]
    assert sum(year is not None for year in years) >= 6
    found = [int(year.group(0)) for year in years if year]
    assert found == sorted(found)


def test_an_instruction_steers_what_is_quoted() -> None:
    focus = Focus("summary", "alternating current induction motor patents")
    result = _analyse([p for article in ("Nikola Tesla", "Doctor Who", "Chloroplast") for p in PASSAGES[article][:20]], focus)
    top = result.points[0]
    assert top.resource_id == "Nikola Tesla" and re.search(r"alternating current|induction motor|patent", top.text, re.I), top.text


def test_disagreements_quote_the_sentences_that_contrast() -> None:
    result = _analyse([p for article in ("Martin Luther", "Nikola Tesla") for p in PASSAGES[article][:30]], Focus("disagreements"))
    contrasting = [p.text for p in result.points if re.search(r"\b(however|but|although|whereas|yet|disput|argu|critic|oppos)", p.text, re.I)]
    assert len(contrasting) >= len(result.points) // 2, [p.text[:80] for p in result.points]


def test_a_sentence_cut_by_a_chunks_edge_is_never_quoted() -> None:
    """The chunker cuts at a size: the first and last pieces of a chunk may be halves of sentences."""
    whole = PASSAGES["Super Bowl 50"][0].text
    cut = Passage("cut", "Super Bowl 50", whole[whole.index(" ", 40) + 1 : len(whole) - 30], ordinal=0)
    assert cut.text[0].islower() and not cut.text.rstrip().endswith(".")
    points = map_batch([cut], Focus(), points=20).points
    assert points and all(point.text in whole and point.text.rstrip()[-1] in '.!?"' for point in points)
    assert all(whole.index(point.text) > 0 and not whole[whole.index(point.text) - 1].isalnum() for point in points)
    assert not any(point.text[0].islower() for point in points)
