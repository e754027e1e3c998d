"""The worker's side of its decoder helper: start it when first needed, hand it one request at a
time, name how a request ended, and replace the helper when it died, ran out of time or is spent.

Forking a fresh child per source cost a median 20 ms of CPU per source (forking and reaping a
140 MiB worker, copy-on-write faults on both sides, and the libraries' first-use work in a child
of a worker that never decodes itself); one helper serves many sources and pays that once. It is forked from the worker on first use rather than started as a
new interpreter: a fork is ready in milliseconds where importing PDFium, lxml and trafilatura
again costs about 0.45 s, every function and extractor the worker can name is already importable,
and the peak resident set the kernel reports when a forked process dies is its own (an exec'd
one's includes the process that started it), which is how a death at the memory limit is told
from a crash.

Guarantees, as with a child per source: a request that runs past its time kills the helper
(``EXTRACT_TIMEOUT``); one that dies at the memory limit or crashes in native code is named from
its exit status (``pipeline.sandbox.outcomes``); a worker interrupted while it waits (Celery's
soft time limit) kills the helper before the exception goes on; the helper dies with its worker
(``pipeline.parent_death``), and the next request after any of these starts a new one.

Memory an earlier document left behind does not count against the next one's budget (the helper
sets each request's limit from where it stands), but it stays in the worker's machine: a helper
whose address space grew by more than ``restart_share`` of the budget is replaced after its reply,
and so is one that answered ``max_requests`` requests or reported the memory limit.

One helper per process, one request at a time (a lock): threads of one worker take turns, and
Celery's prefork pool gives each pool process its own helper. A forked child never uses its
parent's helper: an at-fork hook makes it forget it, as Python's logging forgets its locks.
"""
from __future__ import annotations

import os
import pickle
import resource
import signal
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pipeline.sandbox import helper as helper_side
from pipeline.sandbox.frames import read_frame, write_frame
from pipeline.sandbox.memory import memory
from pipeline.sandbox.outcomes import MEMORY_LIMIT, death, timed_out
from pipeline.types import PipelineError

T = TypeVar("T")

# A new helper costs about 0.5 s of CPU before it runs at full speed (its first documents warm
# the libraries' first-use state and its heap); at this count that is under 0.5 ms per source.
# The count bounds whatever a long life accumulates that the memory check cannot see.
MAX_REQUESTS = 1_000
# The corpus and the largest non-bomb inputs leave a helper 20-100 MiB above its start, where it
# levels off; an eighth of the default 1 GiB budget keeps such a helper and bounds what an idle
# worker holds for documents it has finished.
RESTART_SHARE = 1 / 8
# A new helper closes descriptors and trims its heap before it answers: milliseconds.
START_SECONDS = 30


@dataclass
class _Helper:
    pid: int
    requests: int  # the worker's end of the pipe it writes requests to
    replies: int  # the worker's end of the pipe it reads replies from
    thread: threading.Thread  # the one that forked it: the helper gets the parent-death signal when it ends
    address_space_at_start: int
    """The helper's own, once it gave back the free heap it inherited (its first frame): the
    worker's, read before the fork, may hold tens of MiB freed but not given back yet, so memory
    a request keeps would hide in them."""
    served: int = 0


class DecoderProcess:
    """A reusable helper process that runs decoding tasks under a memory and a time limit."""

    def __init__(self, *, max_requests: int = MAX_REQUESTS, restart_share: float = RESTART_SHARE) -> None:
        self._max_requests = max_requests
        self._restart_share = restart_share
        self._lock = threading.Lock()
        self._helper: _Helper | None = None
        _INSTANCES.add(self)

    @property
    def pid(self) -> int | None:
        """The helper's process id while one runs (a benchmark reads its CPU clock)."""
        current = self._helper
        return current.pid if current else None

    def run(self, task: Callable[[], T], *, memory_mb: int, timeout_seconds: float) -> T:
        """``task()`` in the helper, which may grow by ``memory_mb`` for ``timeout_seconds``.

        ``task`` must pickle by reference: a module-level function, a method of an object that
        pickles, or a ``functools.partial`` of one with plain-data arguments; a lambda or a
        closure fails to pickle here, in the caller. Returns what ``task`` returned (it must
        pickle) and re-raises a ``PipelineError`` it raised. Raises ``PipelineError``
        ``EXTRACT_MEMORY_LIMIT``, ``EXTRACT_TIMEOUT`` or ``EXTRACT_CRASHED`` when the helper ran
        out of memory, out of time or died, and ``RuntimeError`` carrying the helper's traceback
        for any other exception (a bug, which the caller reports as such).
        """
        with self._lock:
            self._live_helper()  # started before the request is pickled, so it does not inherit a copy
            request = pickle.dumps((task, memory_mb, timeout_seconds), protocol=pickle.HIGHEST_PROTOCOL)
            current, reply = self._reply(request, memory_mb, timeout_seconds)
            outcome, value = pickle.loads(reply)
            self._after_reply(current, value, memory_mb)
        if outcome == "error":
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        """End the helper now. A worker need not: the helper ends with it; tests and benchmarks
        call this to read what it used."""
        with self._lock:
            if self._helper is not None:
                self._end(self._helper)

    def _reply(self, request: bytes, memory_mb: int, timeout_seconds: float) -> tuple[_Helper, bytearray]:
        """A live helper's reply to ``request``, and which helper gave it.

        The parent-death signal follows the thread that forked the helper, not the process: a
        helper SIGKILLed while the thread that started it has ended died of that thread's end
        (another thread's request was in flight), not of this document, which is tried once more
        in a new helper.
        """
        for _ in range(2):
            current = self._live_helper()
            started, reply = self._exchange(current, request, timeout_seconds)
            if reply is not None:
                return current, reply
            status, usage = self._end(current)
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            if not (killed and not current.thread.is_alive()):
                break
        grew = 0 if started is None else usage.ru_maxrss * 1024 - started  # ru_maxrss is in KiB
        raise death(status, grew=grew, memory_mb=memory_mb)

    def _exchange(
        self, current: _Helper, request: bytes, timeout_seconds: float
    ) -> tuple[int | None, bytearray | None]:
        """The helper's resident set as it began decoding ``request`` and its reply; either is
        None when the helper died before sending it."""
        deadline = time.monotonic() + timeout_seconds
        try:
            write_frame(current.requests, request)
            started = read_frame(current.replies, deadline)
            if started is None:
                return None, None
            return pickle.loads(started), read_frame(current.replies, deadline)
        except BrokenPipeError:  # it died while idle, after the check in _live_helper
            return None, None
        except TimeoutError:
            self._end(current)
            raise timed_out(timeout_seconds) from None
        except BaseException:  # this worker was interrupted: the helper must not outlive the call
            self._end(current)
            raise

    def _after_reply(self, current: _Helper, value: object, memory_mb: int) -> None:
        """Replace a helper that is spent, kept too much memory or just met the memory limit."""
        current.served += 1
        kept = memory(current.pid).address_space - current.address_space_at_start
        if (
            current.served >= self._max_requests
            or kept > self._restart_share * (memory_mb << 20)
            or (isinstance(value, PipelineError) and value.code == MEMORY_LIMIT)
        ):
            self._end(current)

    def _live_helper(self) -> _Helper:
        """The running helper, or a new one when there is none or it died while idle (an
        operator or the OOM killer, or the end of the thread that started it)."""
        current = self._helper
        if current is not None:
            if os.waitpid(current.pid, os.WNOHANG) == (0, 0):
                return current
            self._close(current)  # reaped by the waitpid above
        self._helper = self._start()
        return self._helper

    def _start(self) -> _Helper:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:  # the helper: never returns
            os.close(requests_write)
            os.close(replies_read)
            helper_side.serve(requests_read, replies_write, worker)
        os.close(requests_read)
        os.close(replies_write)
        # Known at once, so that a fork by another thread meanwhile closes these pipes in its child.
        self._helper = started = _Helper(pid, requests_write, replies_read, threading.current_thread(), 0)
        try:
            said = read_frame(replies_read, time.monotonic() + START_SECONDS)
        except TimeoutError:
            said = None
        except BaseException:  # this worker was interrupted: the helper must not outlive the call
            self._end(started)
            raise
        if said is None:
            status, _ = self._end(started)
            raise RuntimeError(f"the decoder helper did not start within {START_SECONDS} s (wait status {status})")
        started.address_space_at_start = pickle.loads(said)
        return started

    def _end(self, current: _Helper) -> tuple[int, resource.struct_rusage]:
        """Kill the helper (harmless if it is already dead) and reap it: its status and usage."""
        os.kill(current.pid, signal.SIGKILL)
        self._close(current)
        _, status, usage = os.wait4(current.pid, 0)
        return status, usage

    def _close(self, current: _Helper) -> None:
        os.close(current.requests)
        os.close(current.replies)
        self._helper = None

    def _forget_after_fork(self) -> None:
        """In a forked child: the helper is the parent's, never to be used, killed or reaped here;
        the lock may have been held by a thread that does not exist in the child."""
        self._lock = threading.Lock()
        if self._helper is not None:
            os.close(self._helper.requests)
            os.close(self._helper.replies)
            self._helper = None


_INSTANCES: weakref.WeakSet[DecoderProcess] = weakref.WeakSet()


def _forget_helpers_after_fork() -> None:
    for instance in _INSTANCES:
        instance._forget_after_fork()


os.register_at_fork(after_in_child=_forget_helpers_after_fork)

_THIS_PROCESS = DecoderProcess()


def decoder() -> DecoderProcess:
    """This process's decoder helper, which the extractor registry sends sandboxed extractors to."""
    return _THIS_PROCESS
