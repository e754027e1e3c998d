"""Content fingerprints: what decides whether a source must be extracted again."""
from __future__ import annotations

import hashlib
from pathlib import Path

from pipeline.planning import Observed, PreviousSource
from pipeline.types import SourceRef

READ_BLOCK = 1024 * 1024


def file_sha256(path: Path) -> str:
    """Hash the bytes, not the mtime: copies, touches and restores keep their fingerprint."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def observe_attachment(path: Path, ref: SourceRef, previous: PreviousSource | None) -> Observed:
    """Stat the file and hash it only when size or mtime moved since the last revision.

    Opening a notebook compares every source; hashing every file each time would make that cost
    proportional to the bytes in the notebook instead of the number of files.
    """
    info = path.stat()
    if previous is not None and (previous.file_size, previous.file_mtime_ns) == (info.st_size, info.st_mtime_ns):
        fingerprint = previous.fingerprint
    else:
        fingerprint = file_sha256(path)
    return Observed(ref, fingerprint, info.st_size, info.st_mtime_ns)
