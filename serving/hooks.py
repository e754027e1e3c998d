"""gunicorn server hooks (``--config python:serving.hooks``), run in gunicorn's master.

A web process that exits leaves its metric files behind in ``PROMETHEUS_MULTIPROC_DIR``: counters
and histograms must stay (they are totals), but its live gauges (open websockets) would be
counted forever. prometheus_client's ``mark_process_dead`` removes exactly those.
"""
from __future__ import annotations

import os
from typing import Any


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # here: the master imports nothing it does not need

        multiprocess.mark_process_dead(worker.pid)
