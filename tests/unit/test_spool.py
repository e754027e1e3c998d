"""The evidence spool: whole accepted packs or none, bounded, and nothing outside its own folder."""
from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest

from storage.files import TooLarge
from storage.spool import EvidenceSpool


def ids() -> tuple[str, str, str]:
    return uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex


def accept(head: bytes, size: int) -> None:
    pass


def test_write_read_discard(tmp_path: Path) -> None:
    spool = EvidenceSpool(tmp_path / "spool")
    job, source, pack = ids()
    assert spool.read(job, source, pack) is None
    body = b"x" * 3_000_000
    assert spool.write(job, source, pack, io.BytesIO(body), max_bytes=10_000_000, check=accept) == len(body)
    assert spool.read(job, source, pack) == body
    assert spool.job_ids() == [job]
    spool.discard(job, source, pack)
    assert spool.read(job, source, pack) is None
    spool.discard_job(job)
    assert spool.job_ids() == []


def test_two_attempts_at_one_source_keep_their_own_packs(tmp_path: Path) -> None:
    spool = EvidenceSpool(tmp_path)
    job, source, first = ids()
    second = uuid.uuid4().hex
    spool.write(job, source, first, io.BytesIO(b"first"), max_bytes=100, check=accept)
    spool.write(job, source, second, io.BytesIO(b"second"), max_bytes=100, check=accept)
    assert (spool.read(job, source, first), spool.read(job, source, second)) == (b"first", b"second")


def test_a_pack_over_the_limit_leaves_nothing_behind(tmp_path: Path) -> None:
    spool = EvidenceSpool(tmp_path)
    job, source, pack = ids()
    with pytest.raises(TooLarge):
        spool.write(job, source, pack, io.BytesIO(b"x" * (2 * 1024 * 1024 + 1)), max_bytes=2 * 1024 * 1024,
                    check=accept)
    assert list((tmp_path / job).iterdir()) == []


def test_a_refused_check_leaves_nothing_and_sees_the_head_and_size(tmp_path: Path) -> None:
    spool = EvidenceSpool(tmp_path)
    job, source, pack = ids()
    seen = []

    def refuse(head: bytes, size: int) -> None:
        seen.append((head, size))
        raise ValueError("cut short")

    with pytest.raises(ValueError):
        spool.write(job, source, pack, io.BytesIO(b"H" * 100), max_bytes=1000, check=refuse)
    assert seen == [(b"H" * 64, 100)]
    assert list((tmp_path / job).iterdir()) == []


@pytest.mark.parametrize("bad", ["../etc", "ABC", "", "0" * 31, "0" * 32 + "/x"])
def test_ids_that_are_not_ids_never_become_paths(tmp_path: Path, bad: str) -> None:
    spool = EvidenceSpool(tmp_path)
    job, source, pack = ids()
    for args in ((bad, source, pack), (job, bad, pack), (job, source, bad)):
        with pytest.raises(ValueError):
            spool.path(*args)
