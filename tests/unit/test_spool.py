"""The evidence spool: whole packs or none, bounded, and nothing outside its own folder."""
from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest

from storage.spool import EvidenceSpool, PackTooLarge


def ids() -> tuple[str, str]:
    return uuid.uuid4().hex, uuid.uuid4().hex


def test_write_read_discard(tmp_path: Path) -> None:
    spool, (job, source) = EvidenceSpool(tmp_path / "spool"), ids()
    assert spool.read(job, source) is None
    assert spool.write(job, source, io.BytesIO(b"x" * 3_000_000), max_bytes=10_000_000) == 3_000_000
    assert spool.read(job, source) == b"x" * 3_000_000
    assert spool.job_ids() == [job]
    spool.discard(job, source)
    assert spool.read(job, source) is None
    spool.discard_job(job)
    assert spool.job_ids() == []


def test_a_pack_over_the_limit_leaves_nothing_behind(tmp_path: Path) -> None:
    spool, (job, source) = EvidenceSpool(tmp_path), ids()
    with pytest.raises(PackTooLarge):
        spool.write(job, source, io.BytesIO(b"x" * (2 * 1024 * 1024 + 1)), max_bytes=2 * 1024 * 1024)
    assert list((tmp_path / job).iterdir()) == []


@pytest.mark.parametrize("bad", ["../etc", "ABC", "", "0" * 31, "0" * 32 + "/x"])
def test_ids_that_are_not_ids_never_become_paths(tmp_path: Path, bad: str) -> None:
    spool, (job, source) = EvidenceSpool(tmp_path), ids()
    with pytest.raises(ValueError):
        spool.path(bad, source)
    with pytest.raises(ValueError):
        spool.path(job, bad)
