"""The decoder helper's side: read a request, decode it under this request's limits, reply; repeat.

It runs in a process forked from the worker (``pipeline.sandbox.decoder_process``), so PDFium, lxml
and trafilatura are already imported and every function or extractor the worker can name is here
too. A request is ``(task, memory_mb, timeout_seconds)`` pickled, where ``task`` is a function (or
a ``functools.partial`` of one) that pickles by reference; the reply is ``("ok", value)`` or
``("error", exception)``, preceded by the helper's resident set as decoding starts. An allocation
past the limit either raises ``MemoryError``, answered as ``EXTRACT_MEMORY_LIMIT``, or kills the
helper inside native code, which the worker names from its exit status and from how far its peak
resident set rose above that starting point.

The limits are set for each request once it has been read, from where the helper stands then:
``RLIMIT_AS`` is the address space (the document's bytes included) plus the budget, so memory an
earlier document left behind never eats into this one's budget (the worker replaces a helper that
kept too much), and it is lifted again after the reply, so that receiving the next document is not
counted against anybody's. ``RLIMIT_CPU`` is the CPU time used so far plus twice the time limit: a
helper that nobody watches any more ends on ``SIGXCPU`` even if its parent-death signal never came.
"""
from __future__ import annotations

import ctypes
import faulthandler
import math
import os
import pickle
import resource
import signal
import traceback
from collections.abc import Callable
from typing import NoReturn

from pipeline.parent_death import die_with_parent
from pipeline.sandbox.frames import read_frame, write_frame
from pipeline.sandbox.memory import memory, reset_peak
from pipeline.sandbox.outcomes import memory_limit
from pipeline.types import PipelineError

# glibc hands a freed block of 128 KiB or more back to the kernel at once (or trims the heap once
# its free top passes twice the largest such block yet), so a helper that receives documents of a
# few MB faulted every page of their copies in again on every request: about 1,000 faults and 4 ms
# for a 2 MB PDF. Blocks below 16 MiB come from the heap, and up to 32 MiB of it stays free for
# the next request. Looked up in the worker: loading a library after a fork can deadlock.
_LIBC = ctypes.CDLL(None)
_MALLOPT = getattr(_LIBC, "mallopt", None)  # None where the C library is not glibc
# The heap a new helper inherits is the worker's, with whatever the worker freed still resident in
# it. A decoder that reuses those pages grows no resident set, so a death at the memory limit would
# read as a crash (ru_maxrss barely moves); trimming them once at the start makes every later
# allocation show. Free heap the helper leaves itself is bounded by the worker's restart check
# (an eighth of the budget), below the quarter of it that names a death a memory limit.
_MALLOC_TRIM = getattr(_LIBC, "malloc_trim", None)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_HEAP_BLOCKS_BELOW, _FREE_HEAP_KEPT = 16 << 20, 32 << 20


def serve(requests: int, replies: int, worker: int) -> NoReturn:
    """Answer requests from the ``requests`` pipe on ``replies`` until the worker closes it or dies."""
    status = 1
    try:
        die_with_parent(worker)
        _close_inherited_descriptors(keep=(requests, replies))
        faulthandler.disable()  # an abort at the limit is an expected outcome, not a crash to dump
        if _MALLOPT is not None:
            _MALLOPT(_M_MMAP_THRESHOLD, _HEAP_BLOCKS_BELOW)
            _MALLOPT(_M_TRIM_THRESHOLD, _FREE_HEAP_KEPT)
        if _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)
        # Ctrl-C in a terminal reaches the whole process group: stopping is the worker's decision
        # (a warm shutdown lets this request finish). SIGTERM ends the helper plainly instead of
        # running the handlers it inherited from a Celery pool process.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        write_frame(replies, _pickle(memory().address_space))  # what the worker counts kept memory from
        while (request := read_frame(requests)) is not None:
            write_frame(replies, _answer(request, replies))
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no flushing of buffers the worker owns


def _close_inherited_descriptors(keep: tuple[int, ...]) -> None:
    """Close every file the fork copied from the worker but the standard streams and our pipes.

    Held open here they would outlive their purpose in the worker: a broker socket, the instance's
    beat lock, the write end of a pipe whose reader waits for end-of-file (a test runner's browser
    driver never exited while a helper kept its stdin open). A helper needs none of them.
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the directory listing's own descriptor, already closed
                pass


def _answer(request: bytearray, replies: int) -> bytes:
    """Decode one request into its pickled reply, first telling the worker where decoding starts."""
    try:
        loaded = pickle.loads(request)
    except Exception:  # a task the worker could pickle but this process cannot rebuild: a bug
        loaded = _bug("reading the request")
    finally:
        request.clear()  # the document's bytes now live in the task alone
    # Should the helper die from here on, the worker compares the peak it reads when it reaps the
    # helper with this resident set: only what decoding added counts.
    reset_peak()
    write_frame(replies, _pickle(memory().resident))
    if isinstance(loaded, RuntimeError):
        return _pickle(("error", loaded))
    task, memory_mb, timeout_seconds = loaded
    _limit(memory_mb << 20, timeout_seconds)
    try:
        return _pickle(_run(task, memory_mb))
    except MemoryError:  # the result itself does not fit in the budget
        return _pickle(("error", memory_limit(memory_mb)))
    except Exception:
        return _pickle(("error", _bug("sending the result")))
    finally:  # reading the next request, whatever its size, is not this document's cost
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _run(task: Callable[[], object], memory_mb: int) -> tuple[str, object]:
    try:
        return "ok", task()
    except PipelineError as error:
        return "error", error
    except MemoryError:
        return "error", memory_limit(memory_mb)
    except Exception:  # a bug: the worker logs it with the helper's own traceback
        return "error", _bug("decoding")


def _pickle(message: object) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def _bug(doing: str) -> RuntimeError:
    return RuntimeError(f"in the decoder helper, {doing}:\n" + traceback.format_exc()[-4000:])


def _limit(budget: int, timeout_seconds: float) -> None:
    """This request's limits, counted from where the helper stands now."""
    _set_soft_limit(resource.RLIMIT_AS, memory().address_space + budget)
    used = resource.getrusage(resource.RUSAGE_SELF)
    _set_soft_limit(resource.RLIMIT_CPU, math.ceil(used.ru_utime + used.ru_stime + 2 * timeout_seconds) + 1)


def _set_soft_limit(kind: int, value: int) -> None:
    """Set a soft limit, never above the hard limit the worker was started with."""
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
