"""How many chat websockets are open, overall and per user, across every web process of the host.

gunicorn runs ``GNOSI_WEB_PROCESSES`` workers, and a per-process count would let each enforce its
own caps (the real bound would be their sum). So every open socket is a claim file in
``LOCAL_DATA/system/web/sockets``, named ``<pid>.<n>[.<user, hex>]``, and a claim is counted and
made under flock(2) on a guard file, which the kernel releases if its holder dies. Claims of
processes that no longer exist (killed with sockets open) are dropped when the next claim is made.
Every slot is taken by a context manager and given back in its ``finally``, so a socket that ends
any way at all (client close, timeout, error, shutdown) frees what it held.
"""
from __future__ import annotations

import fcntl
import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# Close codes (RFC 6455 §7.4): 1013 "try again later" is the standard code for a server at
# capacity; 4429 (private range, after HTTP 429) tells one user apart from the whole instance.
GLOBAL_CAP_CODE = 1013
USER_CAP_CODE = 4429
_GUARD = ".guard"


class SocketRefused(Exception):
    """The socket must be closed with this websocket close code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass
class Slot:
    """One open socket's claim: always on the global count, on one user's count once signed in."""

    claim: str
    user_id: str | None = None

    @property
    def name(self) -> str:
        return self.claim if self.user_id is None else f"{self.claim}.{self.user_id.encode().hex()}"


class SocketSlots:
    def __init__(self, folder: Path, max_sockets: int, per_user: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.max_sockets = max_sockets
        self.per_user = per_user
        self._numbers = itertools.count()
        # Greenlets of this process queue here cooperatively; flock only orders processes.
        self._in_process = threading.Lock()

    @contextmanager
    def slot(self) -> Iterator[Slot]:
        """Hold one of the host's socket slots for the life of the block, or refuse."""
        slot = Slot(claim=f"{os.getpid()}.{next(self._numbers)}")
        with self._exclusive():
            if len(self._live_claims()) >= self.max_sockets:
                raise SocketRefused(GLOBAL_CAP_CODE, "Too many open chat sockets on this server; try again later.")
            (self.folder / slot.name).touch()
        try:
            yield slot
        finally:
            with self._exclusive():
                (self.folder / slot.name).unlink(missing_ok=True)

    def bind_user(self, slot: Slot, user_id: str) -> None:
        """Count the socket for ``user_id`` (moving it off a previous user), or refuse it."""
        if user_id == slot.user_id:
            return
        suffix = f".{user_id.encode().hex()}"
        with self._exclusive():
            if sum(name.endswith(suffix) for name in self._live_claims()) >= self.per_user:
                raise SocketRefused(USER_CAP_CODE, f"At most {self.per_user} open chat sockets per user; close one first.")
            previous = self.folder / slot.name
            slot.user_id = user_id
            previous.rename(self.folder / slot.name)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with self._in_process, open(self.folder / _GUARD, "a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)  # released when the file closes, or its process dies
            yield

    def _live_claims(self) -> list[str]:
        """Claims of running processes; those of dead ones are deleted on the way."""
        claims = [name for name in os.listdir(self.folder) if name != _GUARD]
        dead = {pid for pid in {name.split(".", 1)[0] for name in claims} if not _running(int(pid))}
        for name in claims:
            if name.split(".", 1)[0] in dead:
                (self.folder / name).unlink(missing_ok=True)
        return [name for name in claims if name.split(".", 1)[0] not in dead]


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True
