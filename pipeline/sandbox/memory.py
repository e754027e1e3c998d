"""A process's memory as the kernel counts it for the decoder's limits (``/proc``, Linux only).

``RLIMIT_AS`` counts the address space, so limits and the helper's growth are read in the same
unit; the resident set and its peak tell how far a helper that died without a word had grown.
"""
from __future__ import annotations

import os
from typing import NamedTuple

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# Writing "5" resets the peak resident set (VmHWM, and the ru_maxrss the parent reads when it
# reaps the process) to the current resident set; it walks no page tables, so it costs microseconds.
_RESET_PEAK = b"5"


class Memory(NamedTuple):
    address_space: int
    resident: int


def memory(pid: int | str = "self") -> Memory:
    """Address space and resident set of a process, in bytes."""
    with open(f"/proc/{pid}/statm", "rb") as statm:
        size, resident = statm.read().split()[:2]
    return Memory(int(size) * _PAGE_SIZE, int(resident) * _PAGE_SIZE)


def reset_peak() -> None:
    """Start this process's peak resident set afresh, so that the peak reported when it dies is
    this request's and not the largest of every document it read before."""
    with open("/proc/self/clear_refs", "wb", buffering=0) as clear_refs:
        clear_refs.write(_RESET_PEAK)
