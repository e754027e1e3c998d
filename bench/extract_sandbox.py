"""What sandboxed extraction costs per source: in the worker's own process, in a child forked per
source, and in the reusable decoder helper.

Usage: .venv/bin/python bench/extract_sandbox.py [--repeat 15]

Loads what an extract worker loads (the Celery tasks and the app around them), then forks one
worker-sized process per way of extracting, so that no way pays for another's forks (after a fork
every page the parent writes faults once more). Each round sends every corpus PDF and web page to
the three, one after the other in an order that rotates, so that a slow spell of a shared machine
lands on all; each measures its own wall and CPU time (CPU of every process involved: its helper
or its children too). The fork per source is a helper that serves one request, forked, like the
child it replaced, from a worker that never extracts in its own process. Before the rounds, the
helper's worker reads the corpus once with a new helper: what a helper costs before it runs at
full speed, paid again at every restart. Prints per-file medians, the median overhead per source,
totals, and what the helper costs to start and to keep.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from statistics import median
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import tasks.ingest  # noqa: E402,F401  (a worker's imports: forks below copy as much as a worker's)
from pipeline.extractors import pick  # noqa: E402
from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.extractors.registry import sniff  # noqa: E402
from pipeline.sandbox import DecoderProcess  # noqa: E402
from pipeline.sandbox.decoder_process import MAX_REQUESTS  # noqa: E402
from pipeline.types import PipelineError  # noqa: E402
from support.services import CORPUS  # noqa: E402

T = TypeVar("T")
LIMITS = ExtractLimits()
_LIBC = ctypes.CDLL(None, use_errno=True)
# How each way extracts, in the worker process that measures it. Only the decoder of the worker
# that uses it ever starts a helper.
PER_SOURCE, REUSABLE = DecoderProcess(max_requests=1), DecoderProcess()
WAYS: dict[str, DecoderProcess | None] = {"in process": None, "fork per source": PER_SOURCE, "reusable helper": REUSABLE}


def extraction(data: bytes, name: str) -> Callable[[], object]:
    """What the registry sends a sandboxed extractor: the extractor's method with its arguments."""
    mime = sniff(data, name)
    return partial(pick(mime, name).extract, data, filename=name, mime=mime, limits=LIMITS)


def extract(way: str, data: bytes, name: str) -> None:
    decoder = WAYS[way]
    try:
        if decoder is None:
            extraction(data, name)()
        else:
            decoder.run(extraction(data, name), memory_mb=LIMITS.memory_mb, timeout_seconds=LIMITS.timeout_seconds)
    except PipelineError:
        pass


def helper_cpu(pid: int | None) -> float:
    """CPU seconds of a running helper (its clock, read without reaping it); 0 for none."""
    if pid is None:
        return 0.0
    clock = ctypes.c_int()
    if _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        raise OSError(ctypes.get_errno(), f"no CPU clock for process {pid}")
    return time.clock_gettime(clock.value)


def reaped_cpu() -> float:
    """CPU time of this process and of the children it has reaped (helpers that ended)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(way: str, data: bytes, name: str) -> tuple[float, float]:
    """In the way's own worker: wall and CPU seconds of one extraction. A helper that ended
    during the call moved all its time into the reaped children's, the part before included."""
    decoder = WAYS[way]
    before = decoder.pid if decoder else None
    wall, cpu = time.perf_counter(), reaped_cpu() + helper_cpu(before)
    extract(way, data, name)
    after = decoder.pid if decoder else None
    return time.perf_counter() - wall, reaped_cpu() + helper_cpu(after) - cpu


def resident_mib(pid: int | str = "self") -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024


def helper_state() -> tuple[int | None, int]:
    """In the reusable helper's worker: its helper's pid and resident MiB."""
    return REUSABLE.pid, resident_mib(REUSABLE.pid) if REUSABLE.pid else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    files = [p for p in sorted((CORPUS / "pdf").glob("*.pdf")) + sorted((CORPUS / "html").glob("*/source.html"))
             if p.stat().st_size]
    inputs = [(f"{p.parent.name}/{p.name}" if p.name == "source.html" else p.name, p.read_bytes()) for p in files]
    # Each way's worker: a fork of this worker-sized process, kept for the whole run.
    workers = {way: DecoderProcess(max_requests=sys.maxsize, restart_share=float("inf")) for way in WAYS}

    def ask(way: str, task: Callable[[], T]) -> T:
        return workers[way].run(task, memory_mb=8 * LIMITS.memory_mb, timeout_seconds=600)

    cold = [ask("reusable helper", partial(measure, "reusable helper", data, name)) for name, data in inputs]
    for way in ("in process", "fork per source"):  # warm: library start-up and the page cache are no way's cost
        for name, data in inputs:
            ask(way, partial(extract, way, data, name))
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {way: {name: [] for name, _ in inputs} for way in WAYS}
    order = list(WAYS)
    helpers_seen: set[int | None] = set()
    for round_ in range(args.repeat):
        rotated = order[round_ % 3:] + order[:round_ % 3]
        for name, data in inputs:
            for way in rotated:
                samples[way][name].append(ask(way, partial(measure, way, data, name)))
        helpers_seen.add(ask("reusable helper", helper_state)[0])
    helper_rss = ask("reusable helper", helper_state)[1]
    worker_rss = {way: ask(way, resident_mib) for way in WAYS}
    for worker in workers.values():
        worker.close()

    def med(way: str, name: str, which: int) -> float:
        return median(sample[which] for sample in samples[way][name]) * 1000

    print(f"{len(inputs)} corpus files, {args.repeat} rotated rounds, worker-sized processes: "
          f"{resident_mib()} MiB resident, cores: {os.cpu_count()}\n")
    print("| file | wall ms in process | fork per source | reusable helper | CPU ms in process | fork per source | "
          "reusable helper |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in inputs:
        walls = " | ".join(f"{med(way, name, 0):.1f}" for way in WAYS)
        cpus = " | ".join(f"{med(way, name, 1):.1f}" for way in WAYS)
        print(f"| {name} | {walls} | {cpus} |")
    totals = {way: [sum(med(way, name, which) for name, _ in inputs) for which in (0, 1)] for way in WAYS}
    plain = totals["in process"]
    print()
    for way in ("fork per source", "reusable helper"):
        overhead = [[med(way, name, which) - med("in process", name, which) for name, _ in inputs] for which in (0, 1)]
        print(f"{way}: median overhead per source wall {median(overhead[0]):+.1f} ms, CPU {median(overhead[1]):+.1f} ms; "
              f"all files wall {plain[0]:.0f} -> {totals[way][0]:.0f} ms ({totals[way][0] / plain[0] - 1:+.1%}), "
              f"CPU {plain[1]:.0f} -> {totals[way][1]:.0f} ms ({totals[way][1] / plain[1] - 1:+.1%})")
    start_cpu = sum(sample[1] for sample in cold) * 1000 - totals["reusable helper"][1]
    print(f"\nreusable helper: {len(helpers_seen)} process(es) over the rounds, {helper_rss} MiB resident at the end "
          f"(workers: {', '.join(f'{way} {mib} MiB' for way, mib in worker_rss.items())})")
    print(f"a new helper's first pass (fork, first use of the libraries, a cold heap): {start_cpu:+.0f} ms CPU over "
          f"a warm pass; at one restart per {MAX_REQUESTS:,} sources that is {start_cpu / MAX_REQUESTS:.2f} ms per source")


if __name__ == "__main__":
    main()
