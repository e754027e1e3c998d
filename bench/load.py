"""HTTP under long-lived connections: latency of ordinary requests while sockets sit open.

Usage: .venv/bin/python bench/load.py [--searches 200] [--chats 50] [--idle 200] [--slow 50]
                                      [--probes 200] [--source DIR]

Starts a real `gnosi serve` (embedded broker, as `make run` does) on 127.0.0.1 with a notebook of
four corpus PDFs, opens ``--idle`` unauthenticated websockets and ``--slow`` slowloris requests
(one header line a second, reopened whenever the server drops one) and keeps them open for the
whole run, then measures:

1. ``GET /api/session`` with nothing else open (``--probes`` requests, 10 at a time);
2. the same while the idle sockets and slow requests are open;
3. at once: ``--searches`` concurrent searches and ``--chats`` concurrent chat turns (SSE, timed
   to the ``done`` event), still with the idle sockets and slow requests open.

Every request has a timeout and every phase a deadline, so a starved server makes the run slow,
not endless; a timed-out request counts as an error at its timeout. The authentication deadline is
raised for the run so that the idle sockets stay open (the worst case: an attacker would reopen
them). ``--source DIR`` serves the code of another checkout (e.g. the commit before a change)
with this checkout's virtualenv, which is how docs/decisions/0007 measured "before".
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.live import Deployment, deployment  # noqa: E402
from support.pressure import idle_websockets, slowloris  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

PDFS = ["dmca.pdf", "tracemonkey.pdf", "naacl06-shinyama.pdf", "federal-register-2020-17221.pdf"]
QUERIES = [
    "notice and takedown procedure", "trace compilation of loops", "paraphrase acquisition from news",
    "federal register comment period", "type specialization", "safe harbor for service providers",
]
REQUEST_TIMEOUT = 30.0
PHASE_DEADLINE = 120.0
PROBE_CONCURRENCY = 10

Row = tuple[str, int, "Outcomes", int]  # kind, concurrency, outcomes, requests not sent


@dataclass
class Outcomes:
    """Latency of every attempt (an error counts at the time it failed) and the error count."""

    seconds: list[float] = field(default_factory=list)
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, started: float, ok: bool) -> None:
        with self.lock:
            self.seconds.append(time.perf_counter() - started)
            self.errors += not ok

    def percentile(self, q: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def attempt(outcomes: Outcomes, call: Callable[[], bool]) -> None:
    started = time.perf_counter()
    try:
        ok = call()
    except (httpx.HTTPError, ValueError):  # refused, timed out, or not the JSON expected
        ok = False
    outcomes.record(started, ok)


def run_phase(calls: list[Callable[[], bool]], concurrency: int) -> tuple[Outcomes, int]:
    """Run ``calls`` on ``concurrency`` threads; returns the outcomes and how many were never
    started because the phase deadline passed."""
    outcomes, lock, queue = Outcomes(), threading.Lock(), list(reversed(calls))
    deadline = time.monotonic() + PHASE_DEADLINE
    start = threading.Barrier(concurrency)

    def worker() -> None:
        start.wait()  # every thread begins together: the load really is concurrent
        while time.monotonic() < deadline:
            with lock:
                if not queue:
                    return
                call = queue.pop()
            attempt(outcomes, call)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PHASE_DEADLINE + REQUEST_TIMEOUT)
    return outcomes, len(queue)


def session_probe(http: httpx.Client) -> Callable[[], bool]:
    return lambda: http.get("/api/session").status_code == 200


def search(http: httpx.Client, notebook_id: str, query: str) -> Callable[[], bool]:
    def call() -> bool:
        response = http.get(f"/api/notebooks/{notebook_id}/search", params={"q": query})
        return response.status_code == 200 and bool(response.json()["results"])

    return call


def chat(http: httpx.Client, notebook_id: str, question: str) -> Callable[[], bool]:
    def call() -> bool:
        body = {"notebook_id": notebook_id, "message": question}
        with http.stream("POST", "/api/chat", json=body) as response:
            return response.status_code == 200 and any(line == "event: done" for line in response.iter_lines())

    return call


def measure(d: Deployment, notebook_id: str, args: argparse.Namespace) -> tuple[list[Row], str]:
    """The three phases against a running deployment; returns the table rows and a pressure line."""
    rows: list[Row] = []
    port = int(d.env["GNOSI_PORT"])
    limits = httpx.Limits(max_connections=args.searches + args.chats + PROBE_CONCURRENCY)
    with httpx.Client(base_url=str(d.api.http.base_url), headers=dict(d.api.http.headers),
                      timeout=REQUEST_TIMEOUT, limits=limits) as http:
        probes = [session_probe(http)] * args.probes
        rows.append(("GET /api/session, nothing else open", PROBE_CONCURRENCY, *run_phase(probes, PROBE_CONCURRENCY)))
        with idle_websockets("127.0.0.1", port, args.idle) as idle, slowloris("127.0.0.1", port, args.slow) as slow:
            time.sleep(1)  # the slow requests are on the server
            rows.append(("GET /api/session, idle sockets and slow requests open", PROBE_CONCURRENCY,
                         *run_phase(probes, PROBE_CONCURRENCY)))
            kinds = {
                "search": [search(http, notebook_id, QUERIES[i % len(QUERIES)]) for i in range(args.searches)],
                "chat turn (SSE, to done)": [chat(http, notebook_id, QUERIES[i % len(QUERIES)] + "?")
                                             for i in range(args.chats)],
            }
            mixed: dict[str, tuple[Outcomes, int]] = {}
            threads = [threading.Thread(target=lambda k=kind, c=calls: mixed.__setitem__(k, run_phase(c, len(c))))
                       for kind, calls in kinds.items()]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            rows.extend((f"{kind}, all at once, same sockets open", len(calls), *mixed[kind]) for kind, calls in kinds.items())
            pressure = (f"idle websockets: {args.idle} requested, {idle.failed} got no answer to their handshake "
                        f"within 10 s, {len(idle.sockets) - idle.closed_by_server()} open at the end; slow requests: "
                        f"{args.slow}, dropped by the server {slow.dropped} times (each reopened at once)")
    return rows, pressure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--source", type=Path, help="serve the code of this checkout instead of this one")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The idle sockets must stay open for the whole run (an attacker would reopen them anyway).
    settings = {"GNOSI_WS_AUTH_SECONDS": "3600", "GNOSI_WS_MAX_SOCKETS": "1000"}
    if args.source is not None:
        settings["PYTHONPATH"] = str(args.source.resolve())
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        vault = VaultBuilder(tmp / "vault")
        ids = [vault.pdf_record(f"r{index}", pdf) for index, pdf in enumerate(PDFS)]
        with deployment(tmp, vault.root, vault.table_id, redis=False, **settings) as d:
            d.start_web()
            notebook_id = d.api.create(ids, title="Load")
            assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
            rows, pressure = measure(d, notebook_id, args)
    print(f"server: {'code from ' + str(args.source) if args.source else 'this checkout'}; cores: {os.cpu_count()}; "
          f"request timeout {REQUEST_TIMEOUT:.0f} s, phase deadline {PHASE_DEADLINE:.0f} s")
    print(pressure + "\n")
    print("| kind | concurrent | requests | errors | not sent (deadline) | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for kind, concurrency, outcomes, unsent in rows:
        print(f"| {kind} | {concurrency} | {len(outcomes.seconds)} | {outcomes.errors} | {unsent} | "
              f"{outcomes.percentile(0.50):.0f} | {outcomes.percentile(0.95):.0f} |")


if __name__ == "__main__":
    main()
