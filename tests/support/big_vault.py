"""A vault whose ingestion takes a few seconds, and leases short enough to recover from a crash
within a test: the durability and crash-recovery tests share them."""
from __future__ import annotations

from pathlib import Path

from support.vault import VaultBuilder

# A running job's lease is renewed by each source's result: it must outlast the slowest source.
# The 117-page lecture script extracts in ~2 s (line boxes, table search) and more on a loaded
# 2-core machine; with 3 s leases they lapsed between results and every pending source was sent
# again until its attempts ran out (ATTEMPTS_EXHAUSTED).
FAST = {"GNOSI_JOB_LEASE_SECONDS": "10", "GNOSI_SWEEP_INTERVAL_SECONDS": "1"}
BIG_COPIES = 16


def big_vault(tmp: Path) -> VaultBuilder:
    """One small PDF plus many records sharing a 117-page PDF, so a job takes a few seconds."""
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    big = vault.attach_corpus("pdf/GeoTopo-komprimiert.pdf")
    for i in range(BIG_COPIES):
        vault.record(f"big-{i:02d}", f"Lecture notes {i}", file=big)
    return vault


def big_ids() -> list[str]:
    return [f"big-{i:02d}" for i in range(BIG_COPIES)]
