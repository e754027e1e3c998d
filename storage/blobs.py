"""Content-addressed copies of attachment bytes under LOCAL_DATA/blobs.

A citation must open the exact bytes it was made from, even after the vault file changed; the
vault is read-only to us, so the instance keeps its own copy, named by SHA-256 (identical files
are stored once). Retention deletes a blob when no source row references its hash any more.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.files import durable_mkdir, durable_replace, remove
from storage.models import LinkedDocument, Source


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
        durable_mkdir(target.parent)
        digest = hashlib.sha256()
        with source.open("rb") as reader, tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as writer:
            while block := reader.read(1024 * 1024):
                digest.update(block)
                writer.write(block)
        if digest.hexdigest() != sha256:
            os.unlink(writer.name)
            return False
        durable_replace(writer.name, target)  # atomic: readers never see a partial blob
        return True

    def put_stream(self, write: Callable[[IO[bytes]], int]) -> tuple[str, int]:
        """Keep the bytes ``write`` writes into the file it is given (a download); returns their
        SHA-256 and size. When ``write`` raises, nothing is kept."""
        self.root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with tempfile.NamedTemporaryFile(dir=self.root, prefix=".incoming-", delete=False) as writer:
            try:
                size = write(_Hashing(writer, digest))
            except BaseException:
                os.unlink(writer.name)
                raise
        sha256 = digest.hexdigest()
        target = self.path(sha256)
        durable_mkdir(target.parent)
        durable_replace(writer.name, target)  # atomic; the same bytes kept twice are one file
        return sha256, size

    def delete_unreferenced(self, session: Session, hashes: set[str]) -> int:
        """Delete the blobs no source and no linked document (bytes a sync downloaded, waiting to be
        extracted) references any more."""
        referenced = set(session.scalars(select(Source.content_hash).where(Source.content_hash.in_(hashes))))
        referenced |= set(session.scalars(
            select(LinkedDocument.content_hash).where(LinkedDocument.content_hash.in_(hashes))
        ))
        return remove(self.path(sha256) for sha256 in hashes - referenced)




class _Hashing:
    """A writable file that hashes what goes through it."""

    def __init__(self, file: IO[bytes], digest: "hashlib._Hash") -> None:
        self.file, self.digest = file, digest

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.file.write(data)
