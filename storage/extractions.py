"""Cached extractions next to the database: LOCAL_DATA/system/extractions/<key[:2]>/<key>.

Extract workers upload each extraction here (``pipeline.extraction_cache`` makes the key and the
bytes) and chunk workers read it back through the internal API; the database host keeps them so
that every worker, on any machine, sees the same cache. An entry lives as long as a kept revision
has a source made from it (``sources.extraction_key``), the retention revisions follow, or a
knowledge source version is parsed from it (its job may parse it again: "restart from parse"); an entry
no source ever took (its job was cancelled or failed) goes after ``ORPHAN_GRACE``.
"""
from __future__ import annotations

import re
import time
from datetime import timedelta
from pathlib import Path
from typing import IO

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.files import receive, remove
from storage.models import KnowledgeSourceVersion, Source

KEY = re.compile(r"[0-9a-f]{64}")
# Longer than any job's extract-to-index wait, so an entry a running job is about to take is kept.
ORPHAN_GRACE = timedelta(days=1)


class ExtractionStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        if not KEY.fullmatch(key):
            raise ValueError(f"not an extraction key: {key!r}")
        return self.root / key[:2] / key

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def write(self, key: str, stream: IO[bytes], *, max_bytes: int) -> int:
        return receive(stream, self.path(key), max_bytes=max_bytes)

    def read(self, key: str) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None

    def delete_unreferenced(self, session: Session, keys: set[str]) -> int:
        """Delete the entries of ``keys`` that no source row names any more."""
        referenced = set(session.scalars(select(Source.extraction_key).where(Source.extraction_key.in_(keys))))
        referenced |= set(session.scalars(
            select(KnowledgeSourceVersion.extraction_key).where(KnowledgeSourceVersion.extraction_key.in_(keys))
        ))
        return remove(self.path(key) for key in keys - referenced)

    def delete_orphans(self, session: Session) -> int:
        """Delete entries older than ``ORPHAN_GRACE`` that no source row names."""
        if not self.root.is_dir():
            return 0
        cutoff = time.time() - ORPHAN_GRACE.total_seconds()
        old = {
            entry.name
            for entry in self.root.glob("??/*")
            if KEY.fullmatch(entry.name) and entry.stat().st_mtime < cutoff
        }
        return self.delete_unreferenced(session, old) if old else 0
