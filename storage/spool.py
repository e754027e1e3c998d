"""Evidence packs waiting to be stored: LOCAL_DATA/system/spool/<job id>/<source id>.<pack id>.pack.

An extract worker uploads a source's pack to the API instance (it cannot reach the database);
the coordinator on the same host reads it when the small ``ingest.index`` message naming it
arrives, and removes it once the source is committed. Each upload has its own pack id, so two
attempts at one source (a re-delivered or recovered extraction) never overwrite each other: a
message is always stored with the pack it names. The job row stays the only truth: a pack that
is lost or torn (disk cleaned, power cut before the OS wrote it) only means the source is still
``indexing``, and lease recovery re-sends its extraction like any lost message.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO

from storage.files import receive

_ID = PACK_ID = re.compile(r"[0-9a-f]{32}")


class EvidenceSpool:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _job_dir(self, job_id: str) -> Path:
        if not _ID.fullmatch(job_id):
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / job_id

    def path(self, job_id: str, source_id: str, pack_id: str) -> Path:
        if not (_ID.fullmatch(source_id) and _ID.fullmatch(pack_id)):
            raise ValueError(f"not a source and pack id: {source_id!r}, {pack_id!r}")
        return self._job_dir(job_id) / f"{source_id}.{pack_id}.pack"

    def write(
        self,
        job_id: str,
        source_id: str,
        pack_id: str,
        stream: IO[bytes],
        *,
        max_bytes: int,
        check: Callable[[bytes, int], object],
    ) -> int:
        """Copy ``stream`` in. ``check(first bytes, size)`` may raise to refuse what arrived;
        readers see a whole accepted pack or none (rename), never a partial one."""
        return receive(stream, self.path(job_id, source_id, pack_id), max_bytes=max_bytes, check=check)

    def read(self, job_id: str, source_id: str, pack_id: str) -> bytes | None:
        try:
            return self.path(job_id, source_id, pack_id).read_bytes()
        except FileNotFoundError:
            return None

    def discard(self, job_id: str, source_id: str, pack_id: str) -> None:
        self.path(job_id, source_id, pack_id).unlink(missing_ok=True)

    def discard_job(self, job_id: str) -> None:
        shutil.rmtree(self._job_dir(job_id), ignore_errors=True)

    def job_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return [entry.name for entry in self.root.iterdir() if _ID.fullmatch(entry.name)]
