"""The lock that allows one job-sweeper schedule (Celery beat) per LOCAL_DATA.

Two beats on one database would run two sweepers and share one schedule file, and two embedded
workers of one instance would each believe the other's jobs are theirs. So whoever starts a worker
with beat for a LOCAL_DATA, `gnosi serve` on the embedded broker or `gnosi worker --beat`, takes an
exclusive ``flock`` on ``LOCAL_DATA/system/beat.lock`` first and refuses to start when it is taken.

Why ``flock`` and not a pid file: the kernel releases the lock when the last process holding the
open file ends, however it ends (SIGKILL included), so a stale lock cannot exist and a pid that was
reused cannot fake a live holder. The lock belongs to the open file, not to one process: a child
that inherits the descriptor keeps the lock alive after its parent closed it or died. That is how
`gnosi serve` hands the lock to its worker and how `gnosi worker` keeps it across ``exec``; and it
means that holding the lock proves no worker that was started under it is still running.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from app.config import Settings


class LockHeld(Exception):
    """Another live process holds the lock; ``holder`` is what it wrote about itself."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path = path
        self.holder = holder


class InstanceLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def acquire(cls, path: Path, holder: str) -> InstanceLock:
        """Take the lock without waiting, or raise LockHeld naming the live holder."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            raise LockHeld(path, text) from None
        lock = cls(path, fd)
        lock.describe(holder)
        return lock

    def describe(self, holder: str) -> None:
        """Record who holds the lock, for the message a refused start shows (never read as truth:
        only the kernel's lock says whether the holder lives)."""
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{holder}\n".encode(), 0)

    def keep_across_exec(self) -> None:
        """The process this one ``exec``s into keeps holding the lock."""
        os.set_inheritable(self.fd, True)

    def close(self) -> None:
        """Close this process's descriptor; the lock lives on in processes that inherited it."""
        os.close(self.fd)


def beat_lock(settings: Settings, holder: str) -> InstanceLock:
    settings.ensure_dirs()
    return InstanceLock.acquire(settings.system_dir / "beat.lock", holder)
