"""Length-prefixed frames over a pipe: how requests and replies cross to and from the decoder helper.

A reader cannot tell where a pickle ends without parsing it, and a reply of megabytes does not
fit a pipe's 64 KiB buffer, so each frame says its length first. The worker reads against a deadline
(the helper's time limit); the helper reads blocking, because it has nothing else to do.
"""
from __future__ import annotations

import os
import select
import struct
import time

_HEADER = struct.Struct("!Q")


def write_frame(fd: int, payload: bytes) -> None:
    """Write ``payload`` behind its length; ``BrokenPipeError`` when the reader is gone."""
    os.write(fd, _HEADER.pack(len(payload)))  # fewer bytes than PIPE_BUF: written whole
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int, deadline: float | None = None) -> bytearray | None:
    """The next frame's payload, or None when the writer closed the pipe first (before or inside
    the frame); ``TimeoutError`` when ``deadline`` (``time.monotonic``) passes first."""
    header = _read_exactly(fd, _HEADER.size, deadline)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    return _read_exactly(fd, size, deadline)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytearray | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    while done < size:
        if deadline is not None:
            _wait_readable(fd, deadline)
        count = os.readv(fd, [view[done:]])
        if not count:
            return None
        done += count
    return buffer


def _wait_readable(fd: int, deadline: float) -> None:
    """Block until ``fd`` has data or its writer closed it; poll, unlike select, takes any fd number."""
    remaining = deadline - time.monotonic()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if remaining <= 0 or not poller.poll(remaining * 1000):
        raise TimeoutError
