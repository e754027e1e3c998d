"""Measure a process tree through /proc: a service's web workers, Celery pool children and the
decoder helpers they fork are all descendants of the process a test or benchmark started."""
from __future__ import annotations

import os
from pathlib import Path


def tree(pid: int) -> list[int]:
    """A process and its descendants (prefork children and gunicorn workers do the work)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        found.append(current)
        todo.extend(int(child) for child in children)
    return found


def tree_peak_kib(pid: int) -> int:
    """Largest VmHWM among a process and its descendants.

    A child that exited but is not reaped yet (a decoder helper, for a moment) has no memory
    and no VmHWM line: it counts as 0. A decoder helper restarts its peak with every request, so
    its peak here is its latest request's.
    """
    peak = 0
    for current in tree(pid):
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        peak = max(peak, next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")), 0))
    return peak


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
