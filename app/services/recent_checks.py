"""Notebooks recently found unchanged, so that openings and questions do not re-observe them.

An opening or a question compares every member's sources with the active revision: reading the
table's records and stat-ing each attachment costs ~150 ms at 1,000 resources
(bench/change_check.py), on every turn. A verdict of "nothing changed" is kept for
``GNOSI_CHANGE_CHECK_SECONDS``, per process, and only while the notebook's durable state is the
one it was computed on (``stamp``: the active revision and the notebook's ``updated_at``, which
membership changes move). So a file edited on disk is noticed by the first opening or question
after the window; anything done through the service (adding or removing sources, a new revision)
is noticed at once. An explicit refresh always looks.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

# Notebooks remembered at most; the oldest verdicts go first (they are the least likely fresh).
MAX_NOTEBOOKS = 10_000


class RecentChecks:
    def __init__(self, window_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_seconds = window_seconds
        self._clock = clock
        self._verdicts: dict[str, tuple[Hashable, float]] = {}
        self._lock = threading.Lock()

    def unchanged(self, notebook_id: str, stamp: Hashable) -> bool:
        """True when ``notebook_id`` was found unchanged at ``stamp`` within the window."""
        with self._lock:
            remembered = self._verdicts.get(notebook_id)
        return (
            remembered is not None
            and remembered[0] == stamp
            and self._clock() - remembered[1] < self.window_seconds
        )

    def remember(self, notebook_id: str, stamp: Hashable) -> None:
        if self.window_seconds <= 0:
            return
        with self._lock:
            self._verdicts.pop(notebook_id, None)
            self._verdicts[notebook_id] = (stamp, self._clock())
            if len(self._verdicts) > MAX_NOTEBOOKS:
                del self._verdicts[next(iter(self._verdicts))]
