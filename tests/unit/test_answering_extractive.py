"""Quality of the extractive engine on SQuAD v1.1 dev, through a real in-memory hybrid index.

Two numbers matter and pull against each other: (a) when the question's paragraph is in the
notebook, the cited sentence should contain the gold answer; (b) when the question's article is
not in the notebook, the engine should refuse (``no_evidence``). Only the question text reaches the
engine (the gold answers are query metadata: leakage). The index mirrors ``storage.retrieval``:
chunker, FTS5 bm25 and hashing vectors fused by reciprocal rank. A small sample runs as a test;
``python tests/unit/test_answering_squad.py ARTICLES`` runs the larger calibration.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from pipeline.answering.extractive import ExtractiveEngine
from pipeline.answering.tools import notebook_tools
from pipeline.answering.types import EvidenceItem, ToolRegistry
from pipeline.chunker import chunk_segments
from pipeline.embedder import HashingEmbedder
from pipeline.fts_query import build_match_query
from pipeline.fusion import reciprocal_rank_fusion
from pipeline.types import Segment

SQUAD = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "qa" / "squad_v1.1_dev"
CANDIDATES = 100


def evidence_items(source_id: str, title: str | None, segments: list[Segment]) -> list[EvidenceItem]:
    """Chunks of one source, as the server's tools would return them."""
    return [
        EvidenceItem(chunk.chunk_id, "rev-1", "res-" + source_id, source_id, chunk.text, chunk.locator, 0.0, title)
        for chunk in chunk_segments(segments, source_fingerprint=source_id)
    ]


class InMemoryNotebook:
    """Hybrid search over a few chunks, the way ``storage.retrieval.search`` does it."""

    def __init__(self, items: list[EvidenceItem]) -> None:
        self.items = items
        self.by_id = {item.chunk_id: item for item in self.items}
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
        self.db.executemany("INSERT INTO fts(rowid, text) VALUES (?, ?)", [(i, it.text) for i, it in enumerate(items)])
        self.embedder = HashingEmbedder()
        self.vectors = self.embedder.embed([item.text for item in self.items])

    def search(self, query: str, limit: int) -> list[EvidenceItem]:
        match = build_match_query(query)
        lexical = (
            [str(row[0]) for row in self.db.execute(
                "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (match, CANDIDATES)
            )]
            if match
            else []
        )
        scores = self.vectors @ self.embedder.embed([query])[0]
        semantic = [str(i) for i in np.argsort(-scores, kind="stable")[:CANDIDATES] if scores[i] > 0]
        fused = reciprocal_rank_fusion([lexical, semantic])[:limit]
        return [
            dataclasses.replace(self.items[int(i)], score=score) for i, score in fused
        ]

    def tools(self) -> ToolRegistry:
        return notebook_tools(
            search=self.search,
            read=self.by_id.get,
            inspect=lambda: [{"title": item.title, "resource_id": item.resource_id} for item in self.items],
        )


@dataclass
class Scores:
    on_topic: int = 0
    answered: int = 0
    best_sentence_has_gold: int = 0
    any_sentence_has_gold: int = 0
    cited_chunk_has_gold: int = 0
    off_topic: int = 0
    refused: int = 0

    def report(self) -> dict[str, float]:
        on, off = max(self.on_topic, 1), max(self.off_topic, 1)
        return {
            "on_topic_questions": self.on_topic,
            "answered_share": round(self.answered / on, 3),
            "best_sentence_contains_gold": round(self.best_sentence_has_gold / on, 3),
            "any_cited_sentence_contains_gold": round(self.any_sentence_has_gold / on, 3),
            "cited_chunk_contains_gold": round(self.cited_chunk_has_gold / on, 3),
            "off_topic_questions": self.off_topic,
            "off_topic_refusal_share": round(self.refused / off, 3),
        }


def load_squad() -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Paragraphs and questions grouped by article title, in file order."""
    paragraphs: dict[str, list[dict]] = defaultdict(list)
    questions: dict[str, list[dict]] = defaultdict(list)
    with open(SQUAD / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            paragraphs[document["title"]].append(document)
    with open(SQUAD / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            questions[query["metadata"]["article"]].append(query)
    return paragraphs, questions


def _final(events) -> dict:  # type: ignore[no-untyped-def]
    return [event for event in events if event.type == "done"][-1].data


def evaluate(
    engine: ExtractiveEngine, indexed: list[str], held_out: list[str], *, per_article: int, stride: int = 1
) -> Scores:
    """Ask ``per_article`` questions of each indexed article and of each held-out article."""
    paragraphs, questions = load_squad()
    notebook = InMemoryNotebook(
        [item for title in indexed for p in paragraphs[title] for item in evidence_items(p["_id"], title, [Segment(p["text"], {"offset": 0})])]
    )
    scores = Scores()
    for title in indexed:
        for query in questions[title][::stride][:per_article]:
            done = _final(engine.answer(query["text"], notebook.tools()))
            gold = query["metadata"]["answers"]
            quotes = [citation["quote"] for citation in done["citations"]]
            chunks = [notebook.by_id[citation["chunk_id"]].text for citation in done["citations"]]
            scores.on_topic += 1
            scores.answered += done["status"] == "answered"
            scores.best_sentence_has_gold += bool(quotes) and any(a in quotes[0] for a in gold)
            scores.any_sentence_has_gold += any(a in q for a in gold for q in quotes)
            scores.cited_chunk_has_gold += any(a in c for a in gold for c in chunks)
    for title in held_out:
        for query in questions[title][::stride][:per_article]:
            scores.off_topic += 1
            scores.refused += _final(engine.answer(query["text"], notebook.tools()))["status"] == "no_evidence"
    return scores


def split_articles(count: int) -> tuple[list[str], list[str]]:
    """Every other article indexed, the others held out: the same split on every run."""
    titles = list(load_squad()[0])[: 2 * count]
    return titles[0::2], titles[1::2]


@pytest.mark.skipif(not SQUAD.exists(), reason="SQuAD corpus missing")
def test_quotes_answers_of_indexed_articles_and_refuses_the_others() -> None:
    indexed, held_out = split_articles(4)

    report = evaluate(ExtractiveEngine(), indexed, held_out, per_article=40, stride=5).report()

    print(report)
    assert report["best_sentence_contains_gold"] >= 0.55
    assert report["off_topic_refusal_share"] >= 0.75


if __name__ == "__main__":
    articles = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    print(json.dumps(evaluate(ExtractiveEngine(), *split_articles(articles), per_article=10_000).report(), indent=2))
