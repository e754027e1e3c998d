"""What each GNOSI_EMBEDDER costs: chunks embedded per second on one core, and a query's latency.

Usage: .venv/bin/python bench/embedders.py [--chunks 300] [--rounds 5] [--embedders hashing,minilm]

Chunks are real corpus text cut by the project's chunker (SQuAD articles, 1,200 characters at
most, as deployed). The embedders run in turns within each round (interleaved,
so drift on a shared machine hits them alike) and the table gives medians, min and max over the
rounds. Each run embeds texts it has not seen in the round before (the hashing embedder caches
per-word features, which a real ingestion of new documents does not always hit). One compute
thread, as the workers run (OMP_NUM_THREADS=1).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(Path(__file__).parent)]

from pipeline.chunker import ChunkSettings, chunk_segments  # noqa: E402
from pipeline.embedder import embedder_from_name  # noqa: E402
from pipeline.types import Segment  # noqa: E402
from quality_support import QA, markdown_table  # noqa: E402

QUESTIONS = ["Who signed the DMCA into law?", "Which NFL team won Super Bowl 50?", "What is a trace tree?"]


def corpus_chunks(count: int) -> list[str]:
    """``count`` distinct chunks of deployed size: each SQuAD article's paragraphs as one text,
    chunked as deployed (a paragraph alone is half a chunk, and would flatter the model)."""
    articles: dict[str, list[str]] = {}
    with open(QA / "squad_v1.1_dev" / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            paragraph = json.loads(line)
            articles.setdefault(paragraph["title"], []).append(paragraph["text"])
    texts: list[str] = []
    for title, paragraphs in articles.items():
        segments = [Segment("\n".join(paragraphs), {"offset": 0})]
        texts += [chunk.text for chunk in chunk_segments(segments, source_fingerprint=title)]
        if len(texts) >= count:
            break
    return texts[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=300, help="chunks embedded per embedder and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--embedders", default="hashing,minilm")
    args = parser.parse_args()
    names = args.embedders.split(",")
    started = time.perf_counter()
    embedders = {}
    for name in names:
        began = time.perf_counter()
        embedders[name] = embedder_from_name(name)
        embedders[name].embed(["warm up"])
        print(f"{name}: loaded in {time.perf_counter() - began:.2f} s", file=sys.stderr)
    pool = corpus_chunks(args.chunks * args.rounds)
    rates: dict[str, list[float]] = {name: [] for name in names}
    query_ms: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        texts = pool[round_ * args.chunks:(round_ + 1) * args.chunks]
        for name in names if round_ % 2 == 0 else reversed(names):
            began = time.perf_counter()
            embedders[name].embed(texts)
            rates[name].append(len(texts) / (time.perf_counter() - began))
            for question in QUESTIONS:
                began = time.perf_counter()
                embedders[name].embed([question])
                query_ms[name].append((time.perf_counter() - began) * 1000)
    print("# Embedders\n")
    print(f"command: {' '.join(sys.argv)}; {args.chunks} chunks × {args.rounds} rounds, interleaved; "
          f"chunks of {ChunkSettings().max_chars} characters (mean {statistics.mean(map(len, pool)):.0f})\n")
    rows = [
        [embedders[name].name, embedders[name].dim, f"{statistics.median(rates[name]):.1f}",
         f"{min(rates[name]):.1f}–{max(rates[name]):.1f}", f"{statistics.median(query_ms[name]):.1f}"]
        for name in names
    ]
    print(markdown_table(["embedder", "dims", "chunks/s (median)", "min–max", "query ms (median)"], rows))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
