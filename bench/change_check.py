"""The change check of openings and questions on a big notebook: every call, and within the window.

Usage: .venv/bin/python bench/change_check.py [--resources 1000] [--calls 50]

A real instance (`gnosi serve` and a worker, embedded broker) ingests a notebook of
``--resources`` records, each with a small text attachment (a SciFact abstract). Then two web
apps over the same data run in this process: one with ``GNOSI_CHANGE_CHECK_SECONDS=0`` (every
opening observes every member, the behaviour before the window) and one with the default window.
Each call is timed twice, interleaved between the two: the check alone (``request_ingest`` with
``only_if_changed``, what an opening and a question run first) and a whole
``GET /api/notebooks/{id}?open=1``. The window's first call is its cold check, so it is left out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from flask import Flask  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.extensions import services  # noqa: E402
from app.services.ingest import request_ingest  # noqa: E402
from support.live import Deployment, deployment  # noqa: E402
from support.services import CORPUS  # noqa: E402
from support.vault import VaultBuilder  # noqa: E402

ABSTRACTS = CORPUS / "qa" / "scifact" / "corpus.jsonl"
WINDOWS = {"every call checks": "0", "within the window": "10"}


def build_vault(root: Path, resources: int) -> VaultBuilder:
    vault = VaultBuilder(root)
    lines = ABSTRACTS.read_text(encoding="utf-8").splitlines()
    for n in range(resources):
        document = json.loads(lines[n % len(lines)])
        (root / "files" / f"r{n:04d}.txt").write_text(f"{document['title']}\n\n{document['text']}\n", encoding="utf-8")
        vault.record(f"r{n:04d}", document["title"][:200] or f"r{n:04d}", file=f"files/r{n:04d}.txt")
    return vault


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} / {statistics.quantiles(values, n=20)[18] * 1000:.1f}"


def measure(d: Deployment, resources: int, calls: int) -> dict[tuple[str, str], list[float]]:
    d.start_web()
    notebook_id = d.api.create([f"r{n:04d}" for n in range(resources)], title="Big")
    job = d.api.wait_for_job(notebook_id, timeout=1800)["job"]
    assert job["state"] == "succeeded", job
    apps: dict[str, Flask] = {
        name: create_app(Settings.from_env({**d.env, "GNOSI_CHANGE_CHECK_SECONDS": window,
                                            "GNOSI_OPENS_PER_MINUTE": "1000000"}))
        for name, window in WINDOWS.items()
    }
    headers = {"Authorization": f"Bearer {d.token}"}
    seconds: dict[tuple[str, str], list[float]] = {}
    for call in range(calls + 1):
        for name, app in apps.items():
            with app.app_context():
                check = timed(lambda: request_ingest(services(), notebook_id, requested_by="bench", only_if_changed=True))
            opening = timed(lambda: app.test_client().get(f"/api/notebooks/{notebook_id}?open=1", headers=headers))
            if call:  # the first call of each is its cold start
                seconds.setdefault((name, "check"), []).append(check)
                seconds.setdefault((name, "open"), []).append(opening)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = build_vault(Path(tmp) / "vault", args.resources)
        with deployment(Path(tmp), vault.root, vault.table_id, redis=False) as d:
            seconds = measure(d, args.resources, args.calls)
    print(f"{args.resources} resources, {args.calls} calls each; p50 / p95 in ms\n")
    print("| change check | check alone | GET ?open=1 |")
    print("|---|---|---|")
    for name in WINDOWS:
        print(f"| {name} | {_ms(seconds[(name, 'check')])} | {_ms(seconds[(name, 'open')])} |")


if __name__ == "__main__":
    main()
