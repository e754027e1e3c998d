"""Files of the instance's own stores: receiving an upload into a file that readers see whole or
not at all, putting a finished file in place so that it survives a power loss, and removing files
that may already be gone."""
from __future__ import annotations

import errno
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


def durable_replace(partial: Path | str, target: Path) -> None:
    """``os.replace(partial, target)`` that a power loss cannot tear: the bytes (every file of a
    folder) reach the disk before the new name does, and the name before this returns. A rename
    alone is atomic only for the processes that see it: after a crash the file system may keep the
    name and lose what was written (a zero-length blob that the database says holds an attachment)."""
    sync_tree(Path(partial))
    os.replace(partial, target)
    sync_folder(target.parent)


def durable_mkdir(folder: Path) -> None:
    """``folder.mkdir(parents=True, exist_ok=True)``, each folder it creates made durable in its
    parent (a new blob shard, say, whose file would otherwise be named in a folder the disk lacks)."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
        sync_folder(created.parent)


def sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` durable (entries created, renamed or deleted in it)."""
    try:
        _fsync(folder, os.O_DIRECTORY)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP):  # some FUSE and network file systems sync no folders
            raise


def sync_tree(path: Path) -> None:
    """Make the file ``path``, or every file and name of the folder ``path``, durable."""
    if path.is_dir():
        for child in path.iterdir():
            sync_tree(child)
        sync_folder(path)
    else:
        _fsync(path, 0)


def _fsync(path: Path, flags: int) -> None:
    descriptor = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


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
