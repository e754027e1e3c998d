"""Chat latency as a client sees it: time to the first event and to ``done``, 1 and 10 users at once.

Usage: .venv/bin/python bench/chat_latency.py [--chunks 10000,100000] [--turns 20] [--web-processes 1,2] [--rounds 2]

A real instance (`gnosi serve`, embedded broker) ingests a notebook of text attachments made of
SciFact abstracts and SQuAD paragraphs, sized to about ``--chunks`` chunks (1,000 chunks a file),
through the whole pipeline. Then, over SSE (`POST /api/chat`) with the offline engine: the first
turn after each start (cold: the revision's vectors are not loaded yet), ``--turns`` turns one after
another, and ``--turns`` turns from each of 10 clients at once (threads, one connection each),
for each ``GNOSI_WEB_PROCESSES`` value in turn, ``--rounds`` times.
Times are measured by the client from sending the request. Questions are drawn from the same QA
sets. Rate limits are lifted for the bench user.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import httpx  # noqa: E402

from bignotebook import QA, QA_SETS, qa_queries  # noqa: E402
from support.live import Api, deployment  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

CHUNKS_PER_FILE = 1000
FILE_CHARS = 1_050_000  # about CHUNKS_PER_FILE chunks of 1,200 characters with 150 of overlap
CLIENTS = 10


def corpus_text() -> str:
    parts = []
    for name in QA_SETS:
        for line in (QA / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                document = json.loads(line)
                parts.append(f"{document.get('title', '')}. {document['text']}")
    return "\n\n".join(parts)


def build_vault(root: Path, chunks: int) -> tuple[VaultBuilder, list[str]]:
    vault, text = VaultBuilder(root), corpus_text()
    ids = []
    for n in range(max(1, chunks // CHUNKS_PER_FILE)):
        start = (n * FILE_CHARS) % max(1, len(text) - FILE_CHARS)
        body = f"Passages, file {n}\n\n{text[start:start + FILE_CHARS]}"  # each file its own bytes
        (root / "files" / f"f{n:04d}.txt").write_text(body, encoding="utf-8")
        ids.append(vault.record(f"f{n:04d}", f"Passages {n}", file=f"files/f{n:04d}.txt"))
    return vault, ids


def turn(http: httpx.Client, notebook_id: str, question: str) -> tuple[float, float]:
    """Seconds to the first event and to ``done``."""
    started = time.perf_counter()
    first = None
    with http.stream("POST", "/api/chat", json={"notebook_id": notebook_id, "message": question}, timeout=300) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("event: "):
                first = first or time.perf_counter() - started
                if line == "event: done":
                    return first, time.perf_counter() - started
                if line == "event: error":
                    raise RuntimeError(f"the turn failed: {response.read()!r}")
    raise RuntimeError("the stream ended without done")


def concurrent(api: Api, notebook_id: str, questions: list[str], turns: int) -> list[tuple[float, float]]:
    results: list[tuple[float, float]] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        http = httpx.Client(base_url=api.http.base_url, headers=api.http.headers, timeout=300)
        for k in range(turns):
            measured = turn(http, notebook_id, questions[(offset * turns + k) % len(questions)])
            with lock:
                results.append(measured)

    threads = [threading.Thread(target=client, args=(offset,)) for offset in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _ms(values: list[float]) -> str:
    p95 = statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]
    return f"{statistics.median(values) * 1000:.0f} / {p95 * 1000:.0f}"


def measure(chunks: int, turns: int, questions: list[str], processes: list[int], rounds: int) -> list[str]:
    """Ingest once, then per round restart `gnosi serve` with each number of web processes in turn
    (so each starts cold and drift hits every variant alike) and pool each variant's turns."""
    samples: dict[int, dict[str, list[tuple[float, float]]]] = {p: {"cold": [], "alone": [], "together": []} for p in processes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        vault, ids = build_vault(root / "vault", chunks)
        with deployment(root, vault.root, vault.table_id, redis=False,
                        GNOSI_CHAT_TURNS_PER_MINUTE="1000000", GNOSI_OPENS_PER_MINUTE="1000000") as d:
            d.start_web()
            started = time.perf_counter()
            notebook_id = d.api.create(ids)
            detail = d.api.wait_for_job(notebook_id, timeout=3600)
            ingest = time.perf_counter() - started
            stored = d.query("SELECT count(*) FROM chunks WHERE revision_id = ?", detail["active_revision"]["id"])[0][0]
            d.stop_web()
            for n in range(rounds):
                for count in processes:
                    d.env["GNOSI_WEB_PROCESSES"] = str(count)
                    d.start_web()
                    asked = iter(questions[n % 8:])  # every variant answers the same questions
                    variant = samples[count]
                    variant["cold"].append(turn(d.api.http, notebook_id, next(asked)))
                    variant["alone"] += [turn(d.api.http, notebook_id, next(asked)) for _ in range(turns)]
                    variant["together"] += concurrent(d.api, notebook_id, [next(asked) for _ in range(CLIENTS * turns)], turns)
                    d.stop_web()
    rows = []
    for count, variant in samples.items():
        alone, together, cold = variant["alone"], variant["together"], variant["cold"]
        first_ratio = statistics.median(t[0] for t in together) / statistics.median(t[0] for t in alone)
        done_ratio = statistics.median(t[1] for t in together) / statistics.median(t[1] for t in alone)
        rows += [
            f"| {stored:,} | {count} | cold first turn | {len(cold)} | {_ms([t[0] for t in cold])} | {_ms([t[1] for t in cold])} "
            f"| | ingested in {ingest:.0f} s |",
            f"| {stored:,} | {count} | 1 client | {len(alone)} | {_ms([t[0] for t in alone])} | {_ms([t[1] for t in alone])} | | |",
            f"| {stored:,} | {count} | {CLIENTS} clients at once | {len(together)} | {_ms([t[0] for t in together])} "
            f"| {_ms([t[1] for t in together])} | {first_ratio:.1f}× / {done_ratio:.1f}× | |",
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000,100000", help="notebook sizes, comma-separated")
    parser.add_argument("--turns", type=int, default=20, help="turns per client per round")
    parser.add_argument("--web-processes", default="1,2", help="GNOSI_WEB_PROCESSES values to compare, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="restarts of each variant, interleaved")
    args = parser.parse_args()
    processes = [int(count) for count in args.web_processes.split(",")]
    questions = qa_queries(2 * (8 + args.turns * (CLIENTS + 1)))
    rows = [
        row for chunks in args.chunks.split(",")
        for row in measure(int(chunks), args.turns, questions, processes, args.rounds)
    ]
    print("| chunks | web processes | run | turns | first event p50 / p95 ms | done p50 / p95 ms "
          "| 10 vs 1 (p50 first / done) | |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
