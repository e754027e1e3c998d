"""Ingestion throughput: the raw PDF extractor against the whole pipeline, by layout, worker count and code.

Usage: .venv/bin/python bench/ingest.py [--resources 300] [--workers 1,2,4] [--no-double] [--shared]
                                        [--embedded] [--no-distinct] [--code DIR ...] [--repeat 3]
                                        [--web-processes 2] [--documents pdf|markdown]

Runs real processes (redis-server, gnosi serve, a coordinator worker and N extract workers, one
compute thread each) on corpus PDFs and prints one table. Peak memory is the largest resident set
(VmHWM) of any process of an extract worker. ``--shared`` runs N workers that each serve both
queues (what `gnosi worker` does by default) instead of a dedicated coordinator. ``--embedded``
adds the embedded default: `gnosi serve` alone, no Redis, with the worker it starts itself (both
queues, serve's default concurrency); its CPU is that of serve's whole process tree.

Every resource has its own bytes (``--distinct``, the default): a copy of a corpus PDF with a
unique comment line after its end, which PDFium reads unchanged (same pages, same text). The
pipeline caches extractions by content hash, so resources cycling over the same 11 files
(``--no-distinct``, the old behaviour) are extracted 11 times whatever their number: the figures
then measure the cache, not the pipeline. The "extractions" column counts the extractions made.

``--documents markdown`` ingests Markdown notes instead (two consecutive SQuAD paragraphs each, as
the analysis tests make them: tests/support/analysis_live.py; distinct by their text): text extraction costs
next to nothing, so the figures are the pipeline's own (steps, messages, chunking, embedding,
indexing), which a comparison of two codes whose PDF extractors differ cannot isolate. Its "pages"
are documents, and "raw" times the text extractor.

``--code DIR`` (repeatable) runs every configuration also with the code of another checkout, e.g.
the commit before a change (``git worktree add ../wt-old 00b93eb``: beside this checkout, so the
support code finds the shared corpus), with this checkout's virtualenv and support code: the
service's processes get ``PYTHONPATH=DIR`` and DIR as their working directory
(tests/support/live.py), which puts DIR's packages ahead of the editable install. Each round runs
each configuration with every code back to back, so a slow spell of a shared machine hits old and
new alike; "time / old" is the median over rounds of a run's time over the first ``--code``'s in
the same round.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from statistics import median
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.analysis_live import squad_notes  # noqa: E402
from support.live import Deployment, deployment  # noqa: E402
from support.processes import tree_cpu_seconds, tree_peak_kib  # noqa: E402
from support.services import CORPUS  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

TIMEOUT_SECONDS = 1800
PDFS = [
    "tracemonkey.pdf", "naacl06-shinyama.pdf", "tableformer-2203.00274.pdf", "thoma-creativity-in-ml.pdf",
    "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf", "i1040nr.pdf", "dmca.pdf",
    "ca-warn-report.pdf", "odf_presentation_01.odp.pdf", "2023-06-20-PV.pdf",
]
# After %%EOF: PDFium still finds the last cross-reference table, so pages and text are unchanged
# (checked with pypdfium2 on all of PDFS), while the content hash differs per resource.
DISTINCT_TRAILER = b"\n%% resource %04d\n"

DEDICATED, SHARED, EMBEDDED = "coordinator + extract", "shared", "embedded"
LAYOUTS = {DEDICATED: "Redis, a coordinator and N extract workers", SHARED: "Redis, N workers on every queue",
           EMBEDDED: "no Redis: gnosi serve and its own worker"}


@dataclass(frozen=True)
class Code:
    """A checkout whose packages the service's processes import."""

    root: Path
    label: str

    @classmethod
    def at(cls, root: Path, name: str) -> Code:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout

        changed = " + changes" if git("status", "--porcelain", "--untracked-files=no").strip() else ""
        return cls(root.resolve(), f"{name} @ {git('rev-parse', '--short', 'HEAD').strip()}{changed}")


@dataclass(frozen=True)
class Config:
    layout: str
    workers: int  # extract workers (embedded: unused, serve starts its own)
    resources: int


# Run in a process of its own with a checkout's packages first, so that each code's pipeline is
# compared with its own extractor: what the pipeline's shape costs, apart from what extraction does.
_RAW = """
import json, sys, time
from pathlib import Path
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.pdf import PdfExtractor
from pipeline.extractors.text import TextExtractor
files = [Path(name) for name in json.loads(sys.argv[1])]
pdf = sys.argv[2] == "pdf"
extractor, mime, limits = (PdfExtractor(), "application/pdf", ExtractLimits()) if pdf else (TextExtractor(), "text/markdown", ExtractLimits())
for path in dict.fromkeys(files):  # warm: library start-up and the page cache are not extraction
    extractor.extract(path.read_bytes(), filename=path.name, mime=mime, limits=limits)
units, started = 0, time.perf_counter()
for path in files:
    extracted = extractor.extract(path.read_bytes(), filename=path.name, mime=mime, limits=limits)
    units += (extracted.page_count or 0) if pdf else 1
print(units / (time.perf_counter() - started))
"""


def raw_units_per_second(files: list[Path], code: Code, documents: str) -> float:
    """The extractor alone, in one process, with ``code``'s extractor (PDFium's pages, or text
    documents): the pipeline's decoder helper is part of what is compared."""
    done = subprocess.run(
        [sys.executable, "-c", _RAW, json.dumps([str(path) for path in files]), documents], cwd=code.root,
        env={**os.environ, "PYTHONPATH": str(code.root)}, check=True, capture_output=True, text=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


@cache
def corpus_pdf(name: str) -> bytes:
    return (CORPUS / "pdf" / name).read_bytes()


def resource_files(vault: VaultBuilder, resources: int, distinct: bool) -> list[str]:
    """Vault paths of the resources' files, the corpus PDFs in turn (see the module docstring)."""
    if not distinct:
        files = [vault.attach_corpus(f"pdf/{name}") for name in PDFS]
        return [files[i % len(files)] for i in range(resources)]
    paths = []
    for i in range(resources):
        name = PDFS[i % len(PDFS)]
        path = f"files/{i:04d}-{name}"
        (vault.root / path).write_bytes(corpus_pdf(name) + DISTINCT_TRAILER % i)
        paths.append(path)
    return paths


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def embedded_worker(d: Deployment) -> int:
    """The pid of serve's own worker, once it consumes: serve queues a sweep before it serves HTTP,
    so an empty broker means the worker is up (as ``ready.`` does for a worker we start)."""
    assert d.web is not None
    broker = Path(d.env["LOCAL_DATA"]) / "system" / "broker.sqlite3"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        worker = next((pid for pid in children(d.web.pid) if b"celery" in Path(f"/proc/{pid}/cmdline").read_bytes()), None)
        if worker is not None:
            with sqlite3.connect(f"file:{broker}?mode=ro", uri=True, timeout=30) as conn:
                if conn.execute("SELECT count(*) FROM kombu_message WHERE visible").fetchone()[0] == 0:
                    return worker
        time.sleep(0.2)
    raise RuntimeError("the embedded worker did not start:\n" + (d.tmp / "serve.log").read_text(errors="replace"))


def start(d: Deployment, config: Config) -> tuple[dict[str, list[int]], list[int]]:
    """Start the layout's processes; returns the pids to bill CPU to, by role, and the extract workers'."""
    d.start_web()
    assert d.web is not None
    if config.layout == EMBEDDED:
        return {"serve": [d.web.pid]}, [embedded_worker(d)]
    if config.layout == SHARED:
        workers = [d.start_worker(f"worker-{i}", "coordinator,extract,chunk", beat=i == 0).pid for i in range(config.workers)]
        return {"web": [d.web.pid], "workers": workers}, workers
    coordinator = d.start_worker("coordinator", "coordinator", beat=True).pid
    extractors = [d.start_worker(f"extract-{i}", "extract,chunk").pid for i in range(config.workers)]
    return {"web": [d.web.pid], "coordinator": [coordinator], "extract": extractors}, extractors


def check_code(pids: Iterable[int], code: Code) -> None:
    """Every Python process we started, and every one serve started (gunicorn, its worker), runs
    with the code's root as working directory and PYTHONPATH: what decides which packages it imports."""
    for pid in pids:
        environ = dict(
            entry.split(b"=", 1) for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in entry
        )
        found = (os.readlink(f"/proc/{pid}/cwd"), environ.get(b"PYTHONPATH", b"").decode())
        if found != (str(code.root), str(code.root)):
            raise RuntimeError(f"process {pid} runs with (cwd, PYTHONPATH) {found}, not the code of {code.label}")


def run(config: Config, code: Code, tmp: Path, distinct: bool, web_processes: int, documents: str) -> dict[str, Any]:
    vault = VaultBuilder(tmp / "vault")
    if documents == "markdown":
        ids = squad_notes(vault, config.resources)
    else:
        ids = [vault.record(f"r{i:04d}", f"R {i}", file=file) for i, file in enumerate(resource_files(vault, config.resources, distinct))]
    with ExitStack() as stack:
        d = stack.enter_context(deployment(
            tmp, vault.root, vault.table_id, redis=config.layout != EMBEDDED, OMP_NUM_THREADS="1",
            PYTHONPATH=str(code.root), GNOSI_WEB_PROCESSES=str(web_processes),
        ))
        roles, extractors = start(d, config)
        assert d.web is not None
        check_code([*(pid for pids in roles.values() for pid in pids), *children(d.web.pid)], code)
        cpu_before = {role: sum(map(tree_cpu_seconds, pids)) for role, pids in roles.items()}
        started = time.perf_counter()
        notebook_id = d.api.create(ids)
        peaks = [0] * len(extractors)
        # The job row is read straight from SQLite: polling the API would load the web process
        # under measurement.
        while not (ended := d.query("SELECT state, error FROM jobs WHERE notebook_id = ? "
                                    "AND state IN ('succeeded', 'failed', 'cancelled')", notebook_id)):
            if time.perf_counter() - started > TIMEOUT_SECONDS:
                raise TimeoutError(f"{config} with {code.label} did not finish in {TIMEOUT_SECONDS} s")
            peaks = [max(peak, tree_peak_kib(pid)) for peak, pid in zip(peaks, extractors)]
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        cpu = {role: sum(map(tree_cpu_seconds, pids)) - cpu_before[role] for role, pids in roles.items()}
        if ended[0][0] != "succeeded":
            raise RuntimeError(f"{config} with {code.label}: the job ended {ended[0]}; logs in {tmp}")
        revision = d.api.get(f"/api/notebooks/{notebook_id}").json()["active_revision"]["id"]
        sources, available, pages = d.query(
            "SELECT count(*), count(*) FILTER (WHERE state = 'available'), coalesce(sum(page_count), 0) "
            "FROM sources WHERE revision_id = ?", revision)[0]
        if available != config.resources:
            raise RuntimeError(f"{config} with {code.label}: {available} of {sources} sources available")
        return {
            "seconds": elapsed,
            "pages": pages if documents == "pdf" else available,
            "extractions": extractions(d, revision),
            "peak_mib": max(peaks) / 1024,
            "cpu": cpu,
        }


def extractions(d: Deployment, revision: str) -> int:
    """Extractions made: one per distinct cached extraction where sources name theirs (the
    extraction cache), else one per source (code without the cache extracts every source)."""
    if not any(column[1] == "extraction_key" for column in d.query("PRAGMA table_info(sources)")):
        return d.query("SELECT count(*) FROM sources WHERE revision_id = ?", revision)[0][0]
    return d.query("SELECT count(DISTINCT extraction_key) FROM sources WHERE revision_id = ?", revision)[0][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=300)
    parser.add_argument("--workers", default="1,2,4", help="extract worker counts, comma-separated")
    parser.add_argument("--shared", action="store_true", help="every worker serves every queue")
    parser.add_argument("--embedded", action="store_true", help="also run gnosi serve alone, without Redis")
    parser.add_argument("--no-double", action="store_true", help="skip the run with twice the resources")
    parser.add_argument("--distinct", action=argparse.BooleanOptionalAction, default=True,
                        help="every resource has its own bytes (--no-distinct: 11 files in turn, mostly cache hits)")
    parser.add_argument("--code", type=Path, action="append", default=[], metavar="DIR",
                        help="also run every configuration with the code of this checkout (repeatable)")
    parser.add_argument("--web-processes", type=int, default=2,
                        help="GNOSI_WEB_PROCESSES of the service (code from before it was a setting runs one)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is the median over rounds")
    parser.add_argument("--documents", choices=("pdf", "markdown"), default="pdf",
                        help="what the resources are (markdown: the pipeline's own cost, see the module docstring)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    codes = [Code.at(REPO, "new"), *(Code.at(root, "old") for root in args.code)]
    if args.documents == "pdf":
        files = [CORPUS / "pdf" / name for name in PDFS]
        files = [files[i % len(files)] for i in range(args.resources)]
    else:
        raw_vault = VaultBuilder(Path(tempfile.mkdtemp(prefix="raw-markdown-")) / "vault")
        squad_notes(raw_vault, args.resources)
        files = sorted((raw_vault.root / "notes").glob("*.md"))
    layout = SHARED if args.shared else DEDICATED
    configs = [Config(layout, int(n), args.resources) for n in args.workers.split(",")]
    if not args.no_double:
        configs.append(Config(layout, 1, args.resources * 2))
    if args.embedded:
        configs.append(Config(EMBEDDED, 0, args.resources))
    samples: dict[tuple[Config, Code], list[dict[str, Any]]] = {(c, code): [] for c in configs for code in codes}
    raws: dict[Code, list[float]] = {code: [] for code in codes}
    # Rounds interleave the configurations, so a slow spell of a shared machine is spread over
    # all of them instead of landing on one; the raw extractor is measured again every round.
    # Each configuration runs with every code back to back, a different code first each round.
    for round_ in range(args.repeat):
        for code in codes:
            raws[code].append(raw_units_per_second(files, code, args.documents))
        for config in configs:
            for code in codes[round_ % len(codes):] + codes[:round_ % len(codes)]:
                with tempfile.TemporaryDirectory() as tmp:
                    row = run(config, code, Path(tmp), args.distinct, args.web_processes, args.documents)
                samples[(config, code)].append({**row, "e2e_raw": row["pages"] / row["seconds"] / raws[code][-1]})
    unit = "pages" if args.documents == "pdf" else "documents"
    print(f"corpus: {args.resources} resources over {len(PDFS)} PDFs, "
          f"{'each with its own bytes' if args.distinct else 'the same files in turn'}; cores: {os.cpu_count()}"
          if args.documents == "pdf" else f"corpus: {args.resources} Markdown documents of SQuAD paragraphs; cores: {os.cpu_count()}")
    print("layouts: " + "; ".join(f"{name}: {LAYOUTS[name]}" for name in dict.fromkeys(c.layout for c in configs)))
    print("code: " + "; ".join(f"{code.label}: {code.root}" for code in codes))
    for code, measured in raws.items():
        print(f"raw extractor of {code.label} ({'PDFium page text' if unit == 'pages' else 'text'}, one process): "
              f"median {median(measured):.0f} {unit}/s "
              f"(rounds: {', '.join(f'{raw:.0f}' for raw in measured)})")
    print(f"medians over {args.repeat} rounds; e2e / raw compares each run with its round's raw figure of the "
          "same code's extractor (what the pipeline costs beside extraction); speed-up "
          "is per page against the first configuration with the same code\n")
    print("| code | layout | extract workers | resources | extractions | pages | seconds (min-max) | time / old "
          "| pages/s | resources/s | e2e / raw | speed-up | peak MiB per worker | CPU s per role |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (config, code), rows in samples.items():
        seconds = [row["seconds"] for row in rows]
        pages = rows[0]["pages"]
        base = median(row["seconds"] / row["pages"] for row in samples[(configs[0], code)])
        old = samples[(config, codes[1])] if len(codes) > 1 else []
        versus_old = median(row["seconds"] / then["seconds"] for row, then in zip(rows, old)) if old else None
        cpu = ", ".join(f"{role} {median(row['cpu'][role] for row in rows):.1f}" for role in rows[0]["cpu"])
        print(
            f"| {code.label} | {config.layout} | {config.workers or 'its own'} | {config.resources} "
            f"| {rows[0]['extractions']} | {pages} | {median(seconds):.1f} ({min(seconds):.1f}-{max(seconds):.1f}) "
            f"| {'-' if versus_old is None else f'{versus_old:.2f}'} "
            f"| {pages / median(seconds):.0f} | {config.resources / median(seconds):.1f} "
            f"| {median(row['e2e_raw'] for row in rows):.2f} | {base * pages / median(seconds):.2f}x "
            f"| {max(row['peak_mib'] for row in rows):.0f} | {cpu} |"
        )


if __name__ == "__main__":
    main()
