"""Content fingerprints: what decides whether a source must be extracted again."""
from __future__ import annotations

import hashlib
from pathlib import Path

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
