"""How many chat websockets are open, overall and per user, and the refusals when too many are.

Counted in this process: gunicorn runs one web worker process, so it sees every socket of the
instance (with several web processes each would enforce its own caps, and the real bound would be
their sum). Every slot is taken by a context manager and given back in its ``finally``, so a
socket that ends any way at all (client close, timeout, error, shutdown) frees what it held.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Close codes (RFC 6455 §7.4): 1013 "try again later" is the standard code for a server at
# capacity; 4429 (private range, after HTTP 429) tells one user apart from the whole instance.
GLOBAL_CAP_CODE = 1013
USER_CAP_CODE = 4429


class SocketRefused(Exception):
    """The socket must be closed with this websocket close code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass
class Slot:
    """One open socket's claim: always on the global count, on one user's count once signed in."""

    user_id: str | None = None


class SocketSlots:
    def __init__(self, max_sockets: int, per_user: int) -> None:
        self.max_sockets = max_sockets
        self.per_user = per_user
        self._lock = threading.Lock()
        self._open = 0
        self._by_user: Counter[str] = Counter()

    @contextmanager
    def slot(self) -> Iterator[Slot]:
        """Hold one of the instance's socket slots for the life of the block, or refuse."""
        with self._lock:
            if self._open >= self.max_sockets:
                raise SocketRefused(GLOBAL_CAP_CODE, "Too many open chat sockets on this server; try again later.")
            self._open += 1
        slot = Slot()
        try:
            yield slot
        finally:
            with self._lock:
                self._open -= 1
                if slot.user_id is not None:
                    self._release_user(slot.user_id)

    def bind_user(self, slot: Slot, user_id: str) -> None:
        """Count the socket for ``user_id`` (moving it off a previous user), or refuse it."""
        if user_id == slot.user_id:
            return
        with self._lock:
            if self._by_user[user_id] >= self.per_user:
                raise SocketRefused(USER_CAP_CODE, f"At most {self.per_user} open chat sockets per user; close one first.")
            self._by_user[user_id] += 1
            if slot.user_id is not None:
                self._release_user(slot.user_id)
            slot.user_id = user_id

    def _release_user(self, user_id: str) -> None:
        self._by_user[user_id] -= 1
        if not self._by_user[user_id]:
            del self._by_user[user_id]
