"""Files of the instance's own stores: receiving an upload into a file that readers see whole or
not at all, and removing files that may already be gone."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

_BLOCK = 1024 * 1024
_HEAD = 64  # bytes handed to a write's check, enough for any fixed prefix


class TooLarge(Exception):
    pass


def receive(
    stream: IO[bytes], target: Path, *, max_bytes: int, check: Callable[[bytes, int], object] | None = None
) -> int:
    """Copy ``stream`` to ``target``; returns the bytes written. Raises ``TooLarge`` past
    ``max_bytes``; ``check(first bytes, size)`` may raise to refuse what arrived. Readers see a
    whole accepted file or none (rename), never a partial one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written, head = 0, b""
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as writer:
        try:
            while block := stream.read(_BLOCK):
                written += len(block)
                if written > max_bytes:
                    raise TooLarge(f"the upload is over {max_bytes} bytes")
                head += block[:_HEAD - len(head)]
                writer.write(block)
            if check is not None:
                check(head, written)
        except BaseException:
            os.unlink(writer.name)
            raise
    os.replace(writer.name, target)
    return written


def remove(paths: Iterable[Path]) -> int:
    """Delete ``paths`` that exist; returns how many were deleted (another process may have
    deleted some first)."""
    removed = 0
    for path in paths:
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed
