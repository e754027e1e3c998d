"""The extractive engine's refusal thresholds, chosen on a development split and reported on a test split.

Usage: .venv/bin/python bench/answerability.py [--articles 24] [--refusal-floor 0.95]
           [--similarity minilm] [--stride 1]

SQuAD v1.1 dev has 48 articles. The first ``--articles`` form the development split, the next as
many the test split; in each, every other article is indexed (an in-memory hybrid notebook as in
``tests/unit/test_answering_extractive.py``) and the others are held out. Every question of an
indexed article should be answered with a cited chunk that holds a gold answer; every question of
a held-out article should be refused. The engine answers with the first sentence, in score order,
whose IDF-weighted coverage of the question (``min_coverage``) and whose chunk's share of the
question's terms (``min_support``) reach their thresholds; so one search per question gives every
threshold pair's outcome. Two choices are printed for the grid: the pair that maximises right
answers plus right refusals on the development split, and the pair with the most right answers
whose development refusal share reaches ``--refusal-floor``; both, and the deployed defaults, are
then measured on the test split.

``--similarity minilm`` adds the sentence model's similarity to the question as a third threshold
(the engine's ``SemanticGate``: only the five best-scored sentences can pass one above 0, as
deployed; a threshold of 0 is the engine without the model, over every sentence); the deployed
gate is then one of the rows. The gate's five sentences go first, ordered by score plus
``--rerank-weight`` times their similarity (0: by score alone), as the engine orders them.
``--stride N`` asks every Nth question (the model embeds six texts per question: the whole set
takes ~12 minutes on one core).

The notebook searches as the calibration test's does (bm25 and hashing vectors fused with equal
weights, RRF k = 60), not exactly as deployed (hashing at weight 0.05, k = 20; or MiniLM vectors
at weight 1): the thresholds act on sentences of whatever chunks the search returns, and
``bench/answer_quality.py`` measures the deployed search end to end.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from itertools import product
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "unit"), str(Path(__file__).parent)]

from pipeline.answering.extractive import ExtractiveSettings, SemanticGate, ranked_sentences  # noqa: E402
from pipeline.embedder import cosine_similarity, embedder_from_name  # noqa: E402
from pipeline.types import Segment  # noqa: E402
from quality_support import markdown_table  # noqa: E402
from test_answering_extractive import InMemoryNotebook, evidence_items, load_squad  # noqa: E402

COVERAGES = [round(0.05 * step, 2) for step in range(0, 13)]
SUPPORTS = [round(0.05 * step, 2) for step in range(6, 19)]
SIMILARITIES = [0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]
KEPT = 30  # candidates kept per question without a model: far more than any threshold pair skips
Thresholds = tuple[float, float, float]  # min_coverage, min_support, min_similarity


@dataclass(frozen=True)
class Candidate:
    coverage: float
    support: float
    similarity: float  # 1 without a model
    right: bool  # its chunk holds a gold answer


@dataclass(frozen=True)
class Question:
    on_topic: bool
    candidates: tuple[Candidate, ...]

    def outcome(self, thresholds: Thresholds) -> str:
        """``right``, ``wrong`` or ``refused`` under these thresholds."""
        for candidate in self.candidates:
            values = (candidate.coverage, candidate.support, candidate.similarity)
            if all(value >= floor for value, floor in zip(values, thresholds, strict=True)):
                return "right" if candidate.right else "wrong"
        return "refused"


def split_questions(
    titles: list[str], settings: ExtractiveSettings, model: str | None, stride: int, gate: SemanticGate
) -> list[Question]:
    paragraphs, questions = load_squad()
    indexed, held_out = titles[0::2], titles[1::2]
    notebook = InMemoryNotebook([
        item
        for title in indexed
        for paragraph in paragraphs[title]
        for item in evidence_items(paragraph["_id"], title, [Segment(paragraph["text"], {"offset": 0})])
    ])
    similarity = cosine_similarity(embedder_from_name(model)) if model else None
    found: list[Question] = []
    for title in indexed + held_out:
        for query in questions[title][::stride]:
            evidence = notebook.search(query["text"], settings.search_limit)
            ranked = ranked_sentences(query["text"], evidence, settings)[:KEPT]
            # The model sees the gate's first sentences, and they go first in the order it gives
            # them; those after them can pass only a threshold of no similarity, which is the
            # engine without a model (every sentence).
            if similarity:
                shown = ranked[: gate.candidates]
                pairs = gate.reranked(shown, similarity(query["text"], [quote.text for quote in shown]))
                pairs += [(quote, 0.0) for quote in ranked[len(shown):]]
            else:
                pairs = [(quote, 1.0) for quote in ranked]
            gold = query["metadata"]["answers"]
            found.append(Question(title in indexed, tuple(
                Candidate(quote.coverage, quote.support, score, any(answer in quote.evidence.text for answer in gold))
                for quote, score in pairs
            )))
    return found


def rates(questions: list[Question], thresholds: Thresholds) -> tuple[float, float, float]:
    """Right answers and answers (shares of on-topic questions), refusals (of off-topic ones)."""
    on = [q.outcome(thresholds) for q in questions if q.on_topic]
    off = [q.outcome(thresholds) for q in questions if not q.on_topic]
    return on.count("right") / len(on), 1 - on.count("refused") / len(on), off.count("refused") / len(off)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=24, help="articles per split (48 in all)")
    parser.add_argument("--refusal-floor", type=float, default=0.95)
    parser.add_argument("--similarity", help="a GNOSI_EMBEDDER sentence model (minilm): its similarity as a third threshold")
    parser.add_argument("--stride", type=int, default=1, help="ask every Nth question")
    parser.add_argument("--rerank-weight", type=float, default=SemanticGate().rerank_weight,
                        help="with --similarity: the share of it added to a candidate's score to order them (0: by score)")
    args = parser.parse_args()
    started = time.perf_counter()
    titles = list(load_squad()[0])
    deployed = ExtractiveSettings()
    gate = SemanticGate(rerank_weight=args.rerank_weight)
    dev = split_questions(titles[: args.articles], deployed, args.similarity, args.stride, gate)
    test = split_questions(titles[args.articles : 2 * args.articles], deployed, args.similarity, args.stride, gate)
    grid = {
        thresholds: rates(dev, thresholds)
        for thresholds in product(COVERAGES, SUPPORTS, SIMILARITIES if args.similarity else [0.0])
    }
    balanced = max(grid, key=lambda pair: grid[pair][0] + grid[pair][2])
    floored = [pair for pair in grid if grid[pair][2] >= args.refusal_floor]
    choices = {"deployed terms alone": (deployed.min_coverage, deployed.min_support, 0.0)}
    if args.similarity:
        choices["deployed, with the model (SemanticGate)"] = (
            deployed.min_coverage, deployed.min_support, SemanticGate().min_similarity
        )
    choices["best right + refused (dev)"] = balanced
    if floored:
        choices[f"most right with dev refusals ≥ {args.refusal_floor:g}"] = max(floored, key=lambda pair: grid[pair][0])
    rows = []
    for label, thresholds in choices.items():
        for split, questions in (("dev", dev), ("test", test)):
            right, answered, refused = rates(questions, thresholds)
            rows.append([label, " / ".join(f"{value:g}" for value in thresholds), split, right, answered, refused])
    print("# Answerability thresholds (SQuAD v1.1 dev, in-memory hybrid notebook)\n")
    print(f"command: {' '.join(sys.argv)}; dev {sum(q.on_topic for q in dev)} on-topic + "
          f"{sum(not q.on_topic for q in dev)} held-out questions, test {sum(q.on_topic for q in test)} + "
          f"{sum(not q.on_topic for q in test)}\n")
    print(markdown_table(["thresholds", "coverage / support / similarity", "split", "right answers", "answered",
                          "held-out refused"], rows))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
