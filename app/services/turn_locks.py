"""One shared-mode turn at a time per conversation thread, across every web process of the host.

A turn holds flock(2) on ``<folder>/<thread id>.lock`` from before it reads the history until its
answer is stored, so the transcript's order is the order in which turns ran and no answer
interleaves with another question, whichever web process each asker reached. The kernel releases
the lock if its process dies mid-turn. Waiting polls a non-blocking flock with ``time.sleep``,
which gevent makes cooperative: a blocking flock would stop every greenlet of the process,
including the one holding the lock. A turn waits at most ``WAIT_SECONDS`` (then its stream ends
with ``CONVERSATION_BUSY``, nothing stored) rather than hang behind a stuck one. The files stay
(empty, one per shared thread).
"""
from __future__ import annotations

import fcntl
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.types import PipelineError

POLL_SECONDS = 0.02
WAIT_SECONDS = 120.0
_THREAD_ID = re.compile(r"[0-9A-Za-z-]{1,64}")


class TurnLocks:
    def __init__(self, folder: Path, wait_seconds: float = WAIT_SECONDS) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.wait_seconds = wait_seconds

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        if not _THREAD_ID.fullmatch(thread_id):
            raise ValueError(f"not a thread id: {thread_id!r}")
        deadline = time.monotonic() + self.wait_seconds
        with open(self.folder / f"{thread_id}.lock", "a") as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise PipelineError(
                            "CONVERSATION_BUSY",
                            f"Another question in this shared conversation has been answering for over "
                            f"{self.wait_seconds:.0f} s; ask again when it is done.",
                        ) from None
                    time.sleep(POLL_SECONDS)
            yield  # closing the file releases the lock
