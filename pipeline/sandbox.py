"""Run a decoder on untrusted bytes in a forked child with an address-space and a time limit.

PDFium inflated a 1 MB Flate stream into 2.1 GB, and a 100 KB PDF drove it to 6.4 GB: a decoder
that explodes inside the worker takes the worker (and its neighbours) down with it, and no size
check on the input bytes predicts it. In a child with ``RLIMIT_AS`` the explosion ends at the
limit and kills only the child (PDFium aborts when an allocation fails; Python raises
``MemoryError``); the worker reads the outcome and records a bounded error on the source.

The child is forked from the already loaded worker, so it starts with PDFium, lxml and
trafilatura imported and costs a fork plus the transfer of its result (milliseconds; the
README gives the measurement) instead of a new interpreter per source. The limit is the
child's address space at the fork plus the budget, so it does not depend on what the worker
happened to load. ``RLIMIT_CPU`` also stops a child whose worker died before it could kill it.

Linux only (``RLIMIT_AS`` and ``/proc``), like every deployment of this service.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable
from typing import TypeVar

from pipeline.types import PipelineError

T = TypeVar("T")

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_READ_CHUNK = 1 << 20
# A child that died without a reply died inside native code (PDFium aborts when an allocation
# fails). When it had grown by a quarter of its budget by then, an allocation at the limit is by
# far the likeliest cause: a decoder that doubles a buffer fails while the buffer holds only a
# third of the budget, and the failed allocation itself never becomes resident.
_NEAR_LIMIT_SHARE = 0.25


def run_limited(task: Callable[[], T], *, memory_mb: int, timeout_seconds: float) -> T:
    """``task()`` in a forked child whose memory may grow by ``memory_mb`` for ``timeout_seconds``.

    Returns what ``task`` returned (it must pickle) and re-raises a ``PipelineError`` it raised.
    Raises ``PipelineError`` ``EXTRACT_MEMORY_LIMIT``, ``EXTRACT_TIMEOUT`` or ``EXTRACT_CRASHED``
    when the child ran out of memory, out of time or died, and ``RuntimeError`` carrying the
    child's traceback for any other exception (a bug, which the caller reports as such).
    """
    budget = memory_mb * 1024 * 1024
    read_end, write_end = os.pipe()
    resident_at_fork = _resident_bytes()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(task, write_end, budget, timeout_seconds)
    os.close(write_end)
    reply: bytes | None = None
    try:
        reply = _read_reply(read_end, timeout_seconds)
    finally:
        os.close(read_end)
        if reply is None:  # out of time, or this worker was interrupted: the child must not outlive the call
            os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
    if reply is None:
        raise PipelineError(
            "EXTRACT_TIMEOUT",
            f"Reading the document took longer than {timeout_seconds:g} s (raise GNOSI_EXTRACT_TIMEOUT_SECONDS).",
        )
    if not reply or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        grew = usage.ru_maxrss * 1024 - resident_at_fork  # ru_maxrss is in KiB on Linux
        raise _death(status, near_limit=grew >= _NEAR_LIMIT_SHARE * budget, memory_mb=memory_mb)
    outcome, value = pickle.loads(reply)
    if outcome == "error":
        raise value
    return value  # type: ignore[no-any-return]


def _child(task: Callable[[], object], write_end: int, budget: int, timeout_seconds: float) -> None:
    """Limit this process, run ``task`` and send ``("ok", value)`` or ``("error", exception)``."""
    status = 1
    try:
        faulthandler.disable()  # an abort at the limit is an expected outcome, not a crash to dump
        _lower_soft_limit(resource.RLIMIT_AS, _address_space_bytes() + budget)
        _lower_soft_limit(resource.RLIMIT_CPU, int(timeout_seconds) + 1)  # SIGXCPU ends an orphan
        try:
            reply: tuple[str, object] = ("ok", task())
        except PipelineError as error:
            reply = ("error", error)
        except MemoryError:
            reply = ("error", _memory_error(budget // (1024 * 1024)))
        except Exception:  # a bug: the caller logs it with the child's own traceback
            reply = ("error", RuntimeError("in the extraction child:\n" + traceback.format_exc()[-4000:]))
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no flushing of buffers the worker owns


def _read_reply(read_end: int, timeout_seconds: float) -> bytes | None:
    """Everything the child writes until it closes the pipe; None when time runs out first."""
    deadline = time.monotonic() + timeout_seconds
    parts: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([read_end], [], [], remaining)[0]:
            return None
        part = os.read(read_end, _READ_CHUNK)
        if not part:
            return b"".join(parts)
        parts.append(part)


def _death(status: int, *, near_limit: bool, memory_mb: int) -> PipelineError:
    """Name why a child ended without a reply: the memory limit, or a crash of the decoder."""
    if near_limit:
        return _memory_error(memory_mb)
    if os.WIFSIGNALED(status):
        how = signal.strsignal(os.WTERMSIG(status)) or f"signal {os.WTERMSIG(status)}"
    else:
        how = f"exit status {os.WEXITSTATUS(status)}"
    return PipelineError("EXTRACT_CRASHED", f"The decoder crashed on this file ({how}); the file is probably damaged.")


def _memory_error(memory_mb: int) -> PipelineError:
    return PipelineError(
        "EXTRACT_MEMORY_LIMIT",
        f"Reading the document needed more than {memory_mb:,} MB of memory (raise GNOSI_EXTRACT_MEMORY_MB).",
    )


def _lower_soft_limit(kind: int, value: int) -> None:
    """Set a soft limit, never above the hard limit the worker was started with."""
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * _PAGE_SIZE


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE_SIZE
