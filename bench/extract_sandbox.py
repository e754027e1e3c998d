"""What the extraction child costs per source: the same extractor in this process and in a fork.

Usage: .venv/bin/python bench/extract_sandbox.py [--repeat 15]

Loads what an extract worker loads (the Celery tasks and the app around them) so the fork copies
a worker-sized process, then extracts every corpus PDF and web page both ways, alternating in
each round so a slow spell of a shared machine lands on both; prints per-file medians and the
median overhead (fork, limits, result transfer, reaping) in wall and CPU milliseconds.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import tasks.ingest  # noqa: E402,F401  (a worker's imports: the fork below copies as much as a worker's)
from pipeline.extractors import extract, pick  # noqa: E402
from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.extractors.registry import sniff  # noqa: E402
from pipeline.types import PipelineError  # noqa: E402
from support.services import CORPUS  # noqa: E402

LIMITS = ExtractLimits()


def in_process(data: bytes, name: str) -> None:
    mime = sniff(data, name)
    try:
        pick(mime, name).extract(data, filename=name, mime=mime, limits=LIMITS)
    except PipelineError:
        pass


def in_child(data: bytes, name: str) -> None:
    try:
        extract(data, filename=name, limits=LIMITS)
    except PipelineError:
        pass


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run, data: bytes, name: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Wall and CPU seconds of one extraction (the child's CPU included)."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    run(data, name)
    return time.perf_counter() - wall, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    files = [p for p in sorted((CORPUS / "pdf").glob("*.pdf")) + sorted((CORPUS / "html").glob("*/source.html"))
             if p.stat().st_size]
    inputs = [(f"{p.parent.name}/{p.name}" if p.name == "source.html" else p.name, p.read_bytes()) for p in files]
    for name, data in inputs:  # warm: library start-up and the page cache are not the child's cost
        in_process(data, name)
        in_child(data, name)
    plain: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in inputs}
    forked: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in inputs}
    for round_ in range(args.repeat):
        for name, data in inputs:
            first, second = (in_process, in_child) if round_ % 2 == 0 else (in_child, in_process)
            for run in (first, second):
                (plain if run is in_process else forked)[name].append(timed(run, data, name))
    rss = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("VmRSS")).split()[1]) // 1024
    print(f"{len(inputs)} corpus files, {args.repeat} interleaved rounds, worker-sized parent: {rss} MiB resident, "
          f"cores: {os.cpu_count()}\n")
    print("| file | wall ms in process | wall ms in child | CPU ms in process | CPU ms in child (both processes) |")
    print("|---|---|---|---|---|")
    wall_overheads, cpu_overheads = [], []
    for name, _ in inputs:
        wall_a, wall_b = (median(s[0] for s in runs) * 1000 for runs in (plain[name], forked[name]))
        cpu_a, cpu_b = (median(s[1] for s in runs) * 1000 for runs in (plain[name], forked[name]))
        wall_overheads.append(wall_b - wall_a)
        cpu_overheads.append(cpu_b - cpu_a)
        print(f"| {name} | {wall_a:.1f} | {wall_b:.1f} | {cpu_a:.0f} | {cpu_b:.0f} |")
    totals = [sum(median(s[i] for s in runs) for runs in table.values()) * 1000 for table in (plain, forked) for i in (0, 1)]
    print(f"\nmedian overhead per source: wall {median(wall_overheads):.1f} ms, CPU {median(cpu_overheads):.1f} ms")
    print(f"all files: wall {totals[0]:.0f} -> {totals[2]:.0f} ms ({totals[2] / totals[0] - 1:+.0%}), "
          f"CPU {totals[1]:.0f} -> {totals[3]:.0f} ms ({totals[3] / totals[1] - 1:+.0%})")
    print(f"largest child peak: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024} MiB resident")


if __name__ == "__main__":
    main()
