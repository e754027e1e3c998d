"""Hierarchical analysis: wall time, CPU and the largest prompt, by notebook size and worker count.

Usage: .venv/bin/python bench/analysis.py [--sizes 100,300] [--workers 1,2] [--rounds 2] [--kind summary]

Why: an analysis maps over bounded batches of a notebook's chunks and reduces their summaries
(docs/decisions/0018) instead of putting every source in one prompt. This measures what that costs
and buys: how long a ``summary`` of 100 and 300 sources takes with 1 and 2 workers, and how large
its largest single step's input is against "all evidence in one prompt".

Runs real processes (a throwaway redis-server, ``gnosi serve``, Celery workers) on a temporary vault
of Markdown sources cut from SQuAD v1.1 dev (the corpus's qa/squad_v1.1_dev: 48 Wikipedia articles):
each source is 6 consecutive paragraphs of one article (about 4,600 characters), taken round-robin
over the articles so that 100 sources span them all; the 100-source notebook is the first 100 of the
300. Each notebook is ingested once (a worker on coordinator,extract,chunk, stopped afterwards);
then every run is ``POST /api/notebooks/{id}/analyses`` {"kind": "summary"}, all sources, engine
"extractive" (the offline engine: no model, so the figures are the pipeline's own cost).

What is counted, per run:
- workers: N fresh Celery workers on the ``analysis`` queue only, ``-c 1`` each (N = 1 or 2: real
  parallelism, one process each), started for the run and warmed by an untimed analysis of the
  smallest notebook first (a real coordinator is long-lived). Nothing else consumes: no
  coordinator and no beat (no sweeper, so no lease expiry can resend steps mid-run). A real
  coordinator serves ``coordinator,analysis``; with no ingestion queued that is the same work.
- wall: seconds from the POST to the analysis row reading ``succeeded`` (polled in SQLite every
  50 ms, not through the API, so the web process is not loaded by the measurement).
- CPU: user + system seconds of the workers' process trees (prefork parent and child) over the run,
  read from /proc/<pid>/stat before the POST and after success; the web process (one POST) is not
  counted.
- steps: ``analyses.levels`` (steps per level, map first); "computed" counts the workers' log lines
  "step L.O computed" for the run (more than the steps: some step was computed twice).
- largest step: max ``input_chars`` over ``analysis_parts`` (≈ tokens: chars / 4), against the naive
  prompt: every chunk of the pinned revision's chosen sources (here all), summed; chunks overlap, so
  this is what a one-prompt analysis of the same chunks would read.

Rounds interleave the worker counts (a different one first each round), so a slow spell of a shared
machine is spread over all of them (the house rule of bench/ingest.py); each figure is the median
over rounds, "speed-up" the median of a round's 1-worker wall over its N-worker wall.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from statistics import median
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from pipeline.analysis.batches import BatchBounds  # noqa: E402
from support.live import Deployment, deployment  # noqa: E402
from support.processes import tree_cpu_seconds  # noqa: E402
from support.services import CORPUS  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

SQUAD = CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl"
PARAGRAPHS_PER_SOURCE = 6
TIMEOUT_SECONDS = 1800
NAIVE_SQL = ("SELECT count(*), coalesce(sum(length(c.text)), 0) FROM chunks c JOIN sources s "
             "ON s.chunks_revision_id = c.revision_id AND s.chunks_source_id = c.source_id WHERE s.revision_id = ?")


def squad_sources(count: int) -> list[tuple[str, str]]:
    """``count`` (title, Markdown text) pairs: runs of paragraphs of one article, round-robin over articles."""
    articles: dict[str, list[str]] = defaultdict(list)
    for line in SQUAD.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        articles[row["title"]].append(row["text"])
    runs = [[(f"{title} ({k // PARAGRAPHS_PER_SOURCE + 1})", paragraphs[k:k + PARAGRAPHS_PER_SOURCE])
             for k in range(0, len(paragraphs) - PARAGRAPHS_PER_SOURCE + 1, PARAGRAPHS_PER_SOURCE)]
            for title, paragraphs in articles.items()]
    ordered = [run[i] for i in range(max(map(len, runs))) for run in runs if i < len(run)]
    if count > len(ordered):
        raise SystemExit(f"the corpus holds {len(ordered)} sources of {PARAGRAPHS_PER_SOURCE} paragraphs, not {count}")
    return [(title, f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n") for title, paragraphs in ordered[:count]]


def ingest(d: Deployment, ids: list[str], sizes: list[int]) -> dict[int, str]:
    """One notebook per size (the first ``size`` sources), ingested once; returns their ids."""
    d.start_worker("ingest", "coordinator,extract,chunk", beat=True, concurrency=2)
    notebooks = {}
    for size in sizes:
        notebook_id = d.api.create(ids[:size], title=f"{size} sources")
        detail = d.api.wait_for_job(notebook_id, timeout=TIMEOUT_SECONDS)
        available = d.query("SELECT count(*) FROM sources WHERE revision_id = ? AND state = 'available'",
                            detail["active_revision"]["id"])[0][0]
        if detail["job"]["state"] != "succeeded" or available != size:
            raise RuntimeError(f"ingesting {size} sources: {detail['job']}, {available} available; logs in {d.tmp}")
        notebooks[size] = notebook_id
    d.kill_worker("ingest")
    return notebooks


def computed_steps(d: Deployment, analysis_id: str) -> int:
    return sum(path.read_text(errors="replace").count(f"analysis {analysis_id}: step ")
               for path in d.tmp.glob("worker-analysis-*.log"))


def analyse(d: Deployment, notebook_id: str, kind: str, pids: list[int]) -> tuple[str, float, float]:
    """Start an analysis and wait until it succeeded: its id, wall seconds and the workers' CPU seconds."""
    cpu_before = sum(map(tree_cpu_seconds, pids))
    started = time.perf_counter()
    response = d.api.post(f"/api/notebooks/{notebook_id}/analyses", {"kind": kind})
    if response.status_code != 202:
        raise RuntimeError(f"starting an analysis: {response.status_code} {response.text}")
    analysis_id = response.json()["id"]
    while (state := d.query("SELECT state FROM analyses WHERE id = ?", analysis_id)[0][0]) not in (
            "succeeded", "failed", "cancelled"):
        if time.perf_counter() - started > TIMEOUT_SECONDS:
            raise TimeoutError(f"analysis {analysis_id} still {state} after {TIMEOUT_SECONDS} s; logs in {d.tmp}")
        time.sleep(0.05)
    wall = time.perf_counter() - started
    cpu = sum(map(tree_cpu_seconds, pids)) - cpu_before
    if state != "succeeded":
        error = d.query("SELECT error_code, error FROM analyses WHERE id = ?", analysis_id)[0]
        raise RuntimeError(f"analysis {analysis_id} ended {state}: {error}; logs in {d.tmp}")
    return analysis_id, wall, cpu


def run(d: Deployment, notebook_id: str, warm_id: str, workers: int, kind: str) -> dict[str, Any]:
    """One measured analysis with ``workers`` fresh analysis workers, warmed by an untimed analysis
    of ``warm_id`` (a long-lived coordinator is warm); they are stopped afterwards."""
    pids = [d.start_worker(f"analysis-{i}", "analysis").pid for i in range(workers)]
    try:
        warm = analyse(d, warm_id, kind, pids)[0]
        d.api.delete(f"/api/notebooks/{warm_id}/analyses/{warm}")
        analysis_id, wall, cpu = analyse(d, notebook_id, kind, pids)
    finally:
        for i in range(workers):
            d.kill_worker(f"analysis-{i}")
    revision, levels = d.query("SELECT revision_id, levels FROM analyses WHERE id = ?", analysis_id)[0]
    largest, map_chars = d.query("SELECT max(input_chars), sum(input_chars) FILTER (WHERE level = 0) "
                                 "FROM analysis_parts WHERE analysis_id = ?", analysis_id)[0]
    chunks, naive = d.query(NAIVE_SQL, revision)[0]
    if map_chars != naive:  # the map level reads every chunk of the chosen sources exactly once
        print(f"warning: the map level reads {map_chars:,} characters, the revision's chunks hold {naive:,}")
    computed = computed_steps(d, analysis_id)
    d.api.delete(f"/api/notebooks/{notebook_id}/analyses/{analysis_id}")  # every run finds the same database
    return {"wall": wall, "cpu": cpu, "levels": tuple(json.loads(levels)), "computed": computed,
            "largest": largest, "naive": naive, "chunks": chunks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,300", help="sources per notebook, comma-separated")
    parser.add_argument("--workers", default="1,2", help="analysis worker counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="each figure is the median over rounds")
    parser.add_argument("--kind", default="summary")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sizes = sorted(int(n) for n in args.sizes.split(","))
    counts = [int(n) for n in args.workers.split(",")]
    began = time.perf_counter()
    samples: dict[tuple[int, int], list[dict[str, Any]]] = {(s, n): [] for s in sizes for n in counts}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        vault = VaultBuilder(Path(tmp) / "vault")
        ids = []
        for i, (title, text) in enumerate(squad_sources(max(sizes))):
            (vault.root / "files" / f"s{i:03d}.md").write_text(text, encoding="utf-8")
            ids.append(vault.record(f"s{i:03d}", title, file=f"files/s{i:03d}.md"))
        d = stack.enter_context(deployment(Path(tmp), vault.root, vault.table_id, OMP_NUM_THREADS="1"))
        d.start_web()
        notebooks = ingest(d, ids, sizes)
        ingested = time.perf_counter() - began
        for round_ in range(args.rounds):
            for size in sizes:
                for workers in counts[round_ % len(counts):] + counts[:round_ % len(counts)]:
                    samples[(size, workers)].append(run(d, notebooks[size], notebooks[sizes[0]], workers, args.kind))
    bounds = BatchBounds()
    print(f"\n{args.kind} of SQuAD v1.1 dev sources ({PARAGRAPHS_PER_SOURCE} paragraphs each); batch bounds "
          f"{bounds.max_items} chunks / {bounds.max_chars:,} chars (defaults); cores: {os.cpu_count()}; "
          f"medians over {args.rounds} rounds; tokens ≈ chars / 4\n")
    print("| sources | workers | chunks | steps per level (map first) | computed | wall s (min-max) | speed-up "
          "| worker CPU s | largest step chars (≈tokens) | naive prompt chars (≈tokens) | naive / largest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (size, workers), rows in samples.items():
        walls = [row["wall"] for row in rows]
        alone = samples.get((size, 1), [])
        speedup = f"{median(a['wall'] / row['wall'] for a, row in zip(alone, rows)):.2f}x" if alone else "-"
        levels = " / ".join(sorted({"+".join(map(str, row["levels"])) for row in rows}))
        largest, naive = max(row["largest"] for row in rows), rows[0]["naive"]
        print(f"| {size} | {workers} | {rows[0]['chunks']} | {levels} | {max(row['computed'] for row in rows)} "
              f"| {median(walls):.1f} ({min(walls):.1f}-{max(walls):.1f}) | {speedup} "
              f"| {median(row['cpu'] for row in rows):.1f} | {largest:,} ({largest // 4:,}) "
              f"| {naive:,} ({naive // 4:,}) | {naive / largest:.0f}x |")
    print(f"\nsetup and ingestion {ingested:.0f} s; total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
