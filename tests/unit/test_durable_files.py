"""What the instance keeps for good (attachment copies, backups, packs) is on the disk before its
name is: a rename alone is atomic for other processes, but after a power loss the file system may
keep the new name and lose the bytes (storage.files.durable_replace). Recorded at ``os.fsync``."""
from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from storage import vector_packs
from storage.backup import DATABASE, MANIFEST, backup, restore
from storage.blobs import BlobStore
from storage.files import durable_replace
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
    assert ("fsync", str(store.root)) in events, "the new shard folder is named durably in the store"
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


BLOB = "blobs/ab/ab" + "0" * 62


def test_a_backup_is_finished_only_once_its_files_are_on_the_disk(tmp_path: Path, events: list[Event]) -> None:
    target = tmp_path / "backup"
    backup(_instance(tmp_path / "local-data"), target)
    _synced_before_named(events, target / MANIFEST, {str(target / DATABASE), str(target / BLOB)})


def test_a_restored_database_appears_only_once_the_files_it_names_are_on_the_disk(
    tmp_path: Path, events: list[Event]
) -> None:
    backup(_instance(tmp_path / "local-data"), tmp_path / "backup")
    events.clear()
    restored = tmp_path / "restored"
    restore(tmp_path / "backup", restored)
    _synced_before_named(events, restored / DATABASE, {str(restored / BLOB), str(restored / "blobs" / "ab")})
    assert (restored / BLOB).read_bytes() == b"%PDF-1.7"


def test_a_file_system_that_cannot_sync_folders_still_takes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some FUSE and network file systems answer EINVAL to fsync on a folder: the file is kept."""
    fsync = os.fsync

    def files_only(descriptor: int) -> None:
        if os.path.isdir(os.readlink(f"/proc/self/fd/{descriptor}")):
            raise OSError(errno.EINVAL, "Invalid argument")
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", files_only)
    partial = tmp_path / "partial"
    partial.write_bytes(b"kept")
    durable_replace(partial, tmp_path / "kept")
    assert (tmp_path / "kept").read_bytes() == b"kept"


def _instance(local_data: Path) -> Path:
    """A migrated instance holding one kept attachment copy."""
    upgrade(local_data / DATABASE)
    (local_data / BLOB).parent.mkdir(parents=True)
    (local_data / BLOB).write_bytes(b"%PDF-1.7")
    return local_data
