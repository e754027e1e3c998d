"""Ingestion throughput: the raw PDF extractor against the whole pipeline with 1, 2 and 4 workers.

Usage: .venv/bin/python bench/ingest.py [--resources 300] [--workers 1,2,4] [--no-double] [--shared]
                                        [--repeat 3]

Runs real processes (redis-server, gnosi serve, a coordinator worker and N extract workers, one
compute thread each) on corpus PDFs and prints one table. Peak memory is the largest resident set
(VmHWM) of any process of an extract worker. ``--shared`` runs N workers that each serve both
queues (what `gnosi worker` does by default) instead of a dedicated coordinator.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from statistics import median
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.extractors.pdf import PdfExtractor  # noqa: E402
from support.live import deployment  # noqa: E402
from support.processes import tree, tree_peak_kib  # noqa: E402
from support.services import CORPUS  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

TIMEOUT_SECONDS = 1800
PDFS = [
    "tracemonkey.pdf", "naacl06-shinyama.pdf", "tableformer-2203.00274.pdf", "thoma-creativity-in-ml.pdf",
    "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf", "i1040nr.pdf", "dmca.pdf",
    "ca-warn-report.pdf", "odf_presentation_01.odp.pdf", "2023-06-20-PV.pdf",
]


def raw_pages_per_second(files: list[Path]) -> tuple[float, int]:
    """PDFium alone, in this process: the pipeline's decoder helper is part of what is compared."""
    pdf, limits = PdfExtractor(), ExtractLimits()
    for path in dict.fromkeys(files):  # warm: library start-up and the page cache are not extraction
        pdf.extract(path.read_bytes(), filename=path.name, mime="application/pdf", limits=limits)
    pages, started = 0, time.perf_counter()
    for path in files:
        pages += pdf.extract(path.read_bytes(), filename=path.name, mime="application/pdf", limits=limits).page_count or 0
    return pages / (time.perf_counter() - started), pages


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process tree so far (children that exited included)."""
    ticks = 0
    for current in tree(pid):
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def run(workers: int, resources: int, tmp: Path, shared: bool) -> dict[str, Any]:
    vault = VaultBuilder(tmp / "vault")
    files = [vault.attach_corpus(f"pdf/{name}") for name in PDFS]
    ids = [vault.record(f"r{i:04d}", f"R {i}", file=files[i % len(files)]) for i in range(resources)]
    with ExitStack() as stack:
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, OMP_NUM_THREADS="1"))
        d.start_web()
        if shared:
            extractors = [d.start_worker(f"worker-{i}", "coordinator,extract", beat=i == 0) for i in range(workers)]
            roles = {"web": [d.web], "workers": extractors}
        else:
            d.start_worker("coordinator", "coordinator", beat=True)
            extractors = [d.start_worker(f"extract-{i}", "extract") for i in range(workers)]
            roles = {"web": [d.web], "coordinator": [d.workers["coordinator"]], "extract": extractors}
        cpu_before = {role: sum(tree_cpu_seconds(p.pid) for p in procs) for role, procs in roles.items()}
        started = time.perf_counter()
        notebook_id = d.api.create(ids)
        peaks = [0] * workers
        # The job row is read straight from SQLite: polling the API would load the web process
        # under measurement.
        while d.query("SELECT state FROM jobs WHERE notebook_id = ? AND state IN ('succeeded', 'failed', 'cancelled')",
                      notebook_id) == []:
            if time.perf_counter() - started > TIMEOUT_SECONDS:
                raise TimeoutError(f"{resources} resources with {workers} workers did not finish in {TIMEOUT_SECONDS} s")
            peaks = [max(p, tree_peak_kib(w.pid)) for p, w in zip(peaks, extractors)]
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        cpu = {role: sum(tree_cpu_seconds(p.pid) for p in procs) - cpu_before[role] for role, procs in roles.items()}
        revision = d.api.get(f"/api/notebooks/{notebook_id}").json()["active_revision"]["id"]
        pages = d.query("SELECT coalesce(sum(page_count), 0) FROM sources WHERE revision_id = ?", revision)[0][0]
        return {
            "seconds": elapsed,
            "pages": pages,
            "pages_s": pages / elapsed,
            "resources_s": resources / elapsed,
            "peak_mib": max(peaks) / 1024,
            "cpu": cpu,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=300)
    parser.add_argument("--workers", default="1,2,4", help="extract worker counts, comma-separated")
    parser.add_argument("--shared", action="store_true", help="every worker serves both queues")
    parser.add_argument("--no-double", action="store_true", help="skip the run with twice the resources")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is the median over rounds")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    files = [CORPUS / "pdf" / name for name in PDFS]
    files = [files[i % len(files)] for i in range(args.resources)]
    configs = [(int(n), args.resources) for n in args.workers.split(",")]
    if not args.no_double:
        configs.append((1, args.resources * 2))
    samples: dict[tuple[int, int], list[dict[str, Any]]] = {config: [] for config in configs}
    raws = []
    # Rounds interleave the configurations, so a slow spell of a shared machine is spread over
    # all of them instead of landing on one; the raw extractor is measured again every round.
    for _ in range(args.repeat):
        raws.append(raw_pages_per_second(files)[0])
        for workers, resources in configs:
            with tempfile.TemporaryDirectory() as tmp:
                row = run(workers, resources, Path(tmp), args.shared)
            samples[(workers, resources)].append({**row, "e2e_raw": row["pages_s"] / raws[-1]})
    print(f"corpus: {args.resources} resources cycling over {len(PDFS)} PDFs; cores: {os.cpu_count()}")
    print("workers: " + ("each serves both queues" if args.shared else "one coordinator plus N extract workers"))
    print(f"raw extractor (PDFium page text, one process): median {median(raws):.0f} pages/s "
          f"(rounds: {', '.join(f'{raw:.0f}' for raw in raws)})")
    print(f"medians over {args.repeat} rounds; e2e / raw compares each run with its round's raw figure\n")
    print("| extract workers | resources | pages | seconds (min-max) | pages/s | resources/s | e2e / raw | speed-up "
          "| peak MiB per worker | CPU s per role |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    base = median(row["seconds"] / row["pages"] for row in samples[configs[0]])
    for (workers, resources), rows in samples.items():
        seconds = [row["seconds"] for row in rows]
        pages = rows[0]["pages"]
        cpu = ", ".join(f"{role} {median(row['cpu'][role] for row in rows):.1f}" for role in rows[0]["cpu"])
        print(
            f"| {workers} | {resources} | {pages} | {median(seconds):.1f} ({min(seconds):.1f}-{max(seconds):.1f}) | "
            f"{pages / median(seconds):.0f} | {resources / median(seconds):.1f} | "
            f"{median(row['e2e_raw'] for row in rows):.2f} | {base * pages / median(seconds):.2f}x | "
            f"{max(row['peak_mib'] for row in rows):.0f} | {cpu} |"
        )


if __name__ == "__main__":
    main()
