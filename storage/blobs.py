"""Content-addressed copies of attachment bytes under LOCAL_DATA/blobs.

A citation must open the exact bytes it was made from, even after the vault file changed; the
vault is read-only to us, so the instance keeps its own copy, named by SHA-256 (identical files
are stored once). Retention deletes a blob when no source row references its hash any more.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.files import remove
from storage.models import Source


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def put_file(self, source: Path, sha256: str) -> bool:
        """Copy ``source`` in if its bytes still hash to ``sha256``; False when they changed since."""
        target = self.path(sha256)
        if target.is_file():
            return True
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with source.open("rb") as reader, tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as writer:
            while block := reader.read(1024 * 1024):
                digest.update(block)
                writer.write(block)
        if digest.hexdigest() != sha256:
            os.unlink(writer.name)
            return False
        os.replace(writer.name, target)  # atomic: readers never see a partial blob
        return True

    def delete_unreferenced(self, session: Session, hashes: set[str]) -> int:
        referenced = set(session.scalars(select(Source.content_hash).where(Source.content_hash.in_(hashes))))
        return remove(self.path(sha256) for sha256 in hashes - referenced)


