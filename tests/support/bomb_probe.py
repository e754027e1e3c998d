"""Process one document bomb the way an extract worker does and report the outcome and memory.

Usage: python tests/support/bomb_probe.py '{"bomb": "flate_bomb_pdf", "args": {...},
       "filename": "x.pdf", "limits": {...}}'

It runs in a fresh interpreter so that its peak resident set and its children's are this bomb's
alone (a test process's children include whatever ran before), and under a 3 GiB address-space
limit so that a cap that does not hold fails the test instead of taking the machine's memory.
Prints one JSON object: the source's status, error code and message, its chunk and character
counts, this process's resident set before and at its peak, and the peak of its decoder helper
(its only child).
"""
from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

SAFETY_NET_BYTES = 3 << 30
resource.setrlimit(resource.RLIMIT_AS, (SAFETY_NET_BYTES, SAFETY_NET_BYTES))
sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]

from pipeline.embedder import embedder_from_name  # noqa: E402
from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.fetch import FetchPolicy  # noqa: E402
from pipeline.sandbox import decoder  # noqa: E402
from pipeline.source_processing import process_source  # noqa: E402
from pipeline.types import SourceRef  # noqa: E402
from support import bombs  # noqa: E402


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def main(order: dict) -> dict:
    data = getattr(bombs, order["bomb"])(**order.get("args", {}))
    embedder = embedder_from_name("hashing")
    embedder.embed(["warm up"])  # imports and tables the embedder builds once are not the bomb's
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on: not building the bomb
    resident_before = _status_kib("VmRSS")
    started = time.monotonic()
    result = process_source(
        "bomb",
        SourceRef("bomb", "file", "attachment", f"files/{order['filename']}"),
        read_attachment=lambda: (data, order["filename"]),
        policy=FetchPolicy(),
        embedder=embedder,
        limits=ExtractLimits(**order.get("limits", {})),
    )
    decoder().close()  # a helper that survived the bomb is reaped too, so its peak is counted below
    chunks = result.evidence.chunks if result.evidence else []
    return {
        "status": result.status,
        "error_code": result.error_code,
        "error": result.error,
        "input_bytes": len(data),
        "chunks": len(chunks),
        "chars": sum(len(chunk["text"]) for chunk in chunks),
        "seconds": round(time.monotonic() - started, 2),
        "rss_before_mib": resident_before // 1024,
        "peak_rss_mib": _status_kib("VmHWM") // 1024,
        "child_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
