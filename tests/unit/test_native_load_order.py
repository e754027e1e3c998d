"""onnxruntime still loads in a process that holds usearch's index (storage.usearch_index).

Both native libraries carry libstdc++; loaded usearch first, onnxruntime crashed the process
(SIGSEGV) on import, which the MiniLM embedder and faster-whisper's voice detection both do.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_onnxruntime_runs_after_the_vector_index_is_loaded() -> None:
    code = (
        "import storage.vector_index, storage.vector_cache, storage.vector_files\n"
        "import numpy as np, onnxruntime\n"
        "from storage.usearch_index import Index\n"
        "index = Index(ndim=4)\n"
        "index.add(np.arange(3), np.eye(3, 4, dtype=np.float32))\n"
        "print(int(index.search(np.eye(1, 4, dtype=np.float32)[0], 1).keys[0]), onnxruntime.get_device())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.split() == ["0", "CPU"]
