"""What the instance keeps for good (attachment copies, backups, packs) is on the disk before its
name is: a rename alone is atomic for other processes, but after a power loss the file system may
keep the new name and lose the bytes (storage.files.durable_replace). Recorded at ``os.fsync``."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from storage import vector_packs
from storage.backup import DATABASE, MANIFEST, backup
from storage.blobs import BlobStore
from storage.migrate import upgrade
from storage.vector_cache import VectorMatrix

Event = tuple[str, str]


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """("fsync", path) for every fsync, ("name", path) for every file or folder a rename names."""
    recorded: list[Event] = []
    fsync, replace, rename = os.fsync, os.replace, os.rename

    def recording_fsync(descriptor: int) -> None:
        recorded.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        fsync(descriptor)

    def naming(real):  # type: ignore[no-untyped-def]
        def named(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
            real(source, target)
            recorded.append(("name", os.fspath(target)))
        return named

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", naming(replace))
    monkeypatch.setattr(os, "rename", naming(rename))
    return recorded


def _synced_before_named(events: list[Event], name: Path, synced: set[str]) -> None:
    """Each of ``synced`` was fsynced before ``name`` appeared, and its folder after."""
    at = events.index(("name", str(name)))
    assert synced <= {path for kind, path in events[:at] if kind == "fsync"}, events
    assert ("fsync", str(name.parent)) in events[at:], events


def test_a_blob_is_on_the_disk_before_its_name(tmp_path: Path, events: list[Event]) -> None:
    store = BlobStore(tmp_path / "blobs")
    data = b"%PDF-1.7 the attachment"
    sha256 = hashlib.sha256(data).hexdigest()
    source = tmp_path / "attachment.pdf"
    source.write_bytes(data)
    assert store.put_file(source, sha256)
    written = [path for kind, path in events if kind == "fsync" and path.startswith(str(store.path(sha256).parent))]
    assert written, events
    _synced_before_named(events, store.path(sha256), {written[0]})
    events.clear()
    downloaded, _ = store.put_stream(lambda out: out.write(b"downloaded bytes"))
    partial = next(path for kind, path in events if kind == "fsync")
    _synced_before_named(events, store.path(downloaded), {partial})
    assert store.path(downloaded).read_bytes() == b"downloaded bytes"


def test_every_file_of_a_pack_is_on_the_disk_before_the_pack_is_named(tmp_path: Path, events: list[Event]) -> None:
    matrix = VectorMatrix(pks=np.arange(3), codes=np.zeros(3, dtype=np.int64), resources=["a.pdf"],
                          vectors=np.ones((3, 4), dtype=np.float32), versions=np.zeros(3, dtype=np.int32),
                          version_keys=("r/s",))
    pack_id = vector_packs.write(tmp_path, matrix, writer="r")
    pack = tmp_path / pack_id
    partial = tmp_path / f"{vector_packs.writing('r')}{pack_id}"
    _synced_before_named(events, pack, {str(partial / file.name) for file in pack.iterdir()} | {str(partial)})


def test_a_backup_is_finished_only_once_its_files_are_on_the_disk(tmp_path: Path, events: list[Event]) -> None:
    local_data = tmp_path / "local-data"
    upgrade(local_data / DATABASE)
    blob = local_data / "blobs" / "ab" / ("ab" + "0" * 62)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"%PDF-1.7")
    target = tmp_path / "backup"
    backup(local_data, target)
    _synced_before_named(events, target / MANIFEST, {str(target / DATABASE), str(target / blob.relative_to(local_data))})
