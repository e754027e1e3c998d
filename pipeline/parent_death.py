"""Make a process die with its parent (Linux ``prctl(PR_SET_PDEATHSIG)``).

A process whose parent is SIGKILLed is not told by default: it is re-parented and runs on. For the
embedded worker that meant a second worker and a second beat after every `kill -9` of serve, and a
decoder helper (pipeline.sandbox) would hold its memory after its extract worker died. The kernel
sends the signal chosen here when the parent ends, however it ends. It lives in ``pipeline`` because
the decoder helper needs it there and ``pipeline`` imports nothing from ``app``.

Linux sends it when the *thread* that created the process ends, not only the whole parent: a
process started from a short-lived thread dies with that thread.

SIGKILL rather than SIGTERM: a SIGTERMed Celery worker waits for its running tasks (an OCR run can
take minutes, and with serve gone their callbacks to the API fail and retry), holding the instance
lock all the while so the restart is refused. The durable job rows make a sudden death harmless:
the next start expires the dead worker's leases and re-sends its work (see app/serve.py).
"""
from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
# Loaded once in the parent: loading a library in a child forked from a threaded process can
# deadlock on the loader's lock, so a preexec function must only call what is already here.
_prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Ask for ``sig`` when the parent ends; if ``parent_pid`` already ended (it may die between
    our fork and this call, and the kernel only signals deaths after it), take ``sig`` now.

    A no-op where prctl does not exist (not Linux): there a SIGKILLed parent can still leave this
    process running, and the instance lock still refuses to start a second one beside it.
    """
    if _prctl is None:
        return
    if _prctl(*(ctypes.c_ulong(arg) for arg in (PR_SET_PDEATHSIG, sig, 0, 0, 0))) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)
