"""Look at real process trees through /proc (Linux), so restart tests need no psutil."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def alive(pid: int) -> bool:
    """A zombie counts as dead: it runs nothing, and some PID 1s never reap their orphans."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            ppid = parent(int(entry.name))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found and alive(child):
                found.add(child)
                stack.append(child)
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except (FileNotFoundError, ProcessLookupError):
        return []


def environ(pid: int) -> dict[str, str]:
    try:
        raw = (PROC / str(pid) / "environ").read_bytes().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def beat_workers(local_data: str) -> list[int]:
    """Celery worker processes that run beat (``-B``) for this LOCAL_DATA: the top of each tree
    (their pool processes and beat child carry the same command line and are not counted)."""
    def runs_beat(pid: int) -> bool:
        args = cmdline(pid)
        return "celery" in " ".join(args) and "worker" in args and ("-B" in args or "--beat" in args)

    candidates = [
        int(entry.name) for entry in PROC.iterdir()
        if entry.name.isdigit() and alive(int(entry.name)) and runs_beat(int(entry.name))
        and environ(int(entry.name)).get("LOCAL_DATA") == local_data
    ]
    return [pid for pid in candidates if parent(pid) not in candidates]


def wait_until_dead(pids: set[int], timeout: float) -> set[int]:
    """Wait for ``pids`` to end; returns the ones still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        survivors = {pid for pid in pids if alive(pid)}
        if not survivors:
            return set()
        time.sleep(0.1)
    return {pid for pid in pids if alive(pid)}


def kill_all(pids: set[int]) -> None:
    """SIGKILL by PID whatever a test left running (only PIDs the test itself recorded)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
