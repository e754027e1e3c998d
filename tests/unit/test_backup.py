"""Backups are consistent while the database is written, and a restore writes nothing until it
has checked the schema and every file."""
from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from storage.backup import DATABASE, MANIFEST, BackupError, backup, read_manifest, restore
from storage.migrate import current_revision, head, known_revisions, upgrade

BLOB = "blobs/ab/ab" + "0" * 62
EXTRACTION = "system/extractions/cd/cd" + "1" * 62


@pytest.fixture
def local_data(tmp_path: Path) -> Path:
    """A migrated instance with a user, a kept blob, a cached extraction and the two secrets."""
    root = tmp_path / "local-data"
    upgrade(root / DATABASE)
    with closing(sqlite3.connect(root / DATABASE)) as db, db:
        db.execute("INSERT INTO workspaces (id, vault_hash, name, created_at) VALUES ('w1', 'v', 'lab', '2026-12-01')")
    for relative, data in ((BLOB, b"%PDF-1.7 bytes"), (EXTRACTION, b"extraction"),
                           ("system/session-key", b"key"), ("system/internal-token", b"token")):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    (root / "system" / "spool").mkdir()
    (root / "system" / "spool" / "pack").write_bytes(b"in transit")
    return root


def workspaces(database: Path) -> list[tuple[str]]:
    with closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT name FROM workspaces ORDER BY name").fetchall()


def test_a_backup_holds_what_a_restore_needs_and_no_more(local_data: Path, tmp_path: Path) -> None:
    manifest = backup(local_data, tmp_path / "backup")
    assert manifest.schema == head()
    assert sorted(entry.path for entry in manifest.files) == sorted(
        [DATABASE, BLOB, EXTRACTION, "system/session-key", "system/internal-token"]
    )
    assert read_manifest(tmp_path / "backup") == manifest

    restore(tmp_path / "backup", tmp_path / "restored")
    for relative in (BLOB, EXTRACTION, "system/session-key", "system/internal-token"):
        assert (tmp_path / "restored" / relative).read_bytes() == (local_data / relative).read_bytes()
    assert workspaces(tmp_path / "restored" / DATABASE) == [("lab",)]
    assert not (tmp_path / "restored" / "system" / "spool").exists()


def test_a_backup_does_not_wait_for_a_writer_and_holds_only_what_was_committed(
    local_data: Path, tmp_path: Path
) -> None:
    with closing(sqlite3.connect(local_data / DATABASE, isolation_level=None)) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO workspaces (id, vault_hash, name, created_at) VALUES ('w2', 'v', 'uncommitted', '2026-12-01')")
        backup(local_data, tmp_path / "backup")
        writer.execute("COMMIT")
    assert workspaces(tmp_path / "backup" / DATABASE) == [("lab",)]
    assert workspaces(local_data / DATABASE) == [("lab",), ("uncommitted",)]


def test_a_backup_refuses_a_folder_that_holds_something(local_data: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(BackupError) as refused:
        backup(local_data, tmp_path / "taken")
    assert refused.value.code == "BACKUP_TARGET_NOT_EMPTY"
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"


def edit_manifest(backup_dir: Path, change) -> None:  # type: ignore[no-untyped-def]
    document = json.loads((backup_dir / MANIFEST).read_text())
    change(document)
    (backup_dir / MANIFEST).write_text(json.dumps(document))


@pytest.mark.parametrize(("damage", "code"), [
    (lambda b: (b / BLOB).write_bytes(b"%PDF-1.7 bytez"), "BACKUP_CORRUPT"),
    (lambda b: (b / EXTRACTION).unlink(), "BACKUP_CORRUPT"),
    (lambda b: (b / MANIFEST).unlink(), "BACKUP_INCOMPLETE"),
    (lambda b: edit_manifest(b, lambda d: d.update(schema="9999")), "SCHEMA_MISMATCH"),
    (lambda b: edit_manifest(b, lambda d: d.update(format=99)), "BACKUP_FORMAT_UNKNOWN"),
    (lambda b: edit_manifest(b, lambda d: d["files"].append({"path": "../escape", "size": 0, "sha256": ""})),
     "BACKUP_CORRUPT"),
])
def test_a_damaged_backup_is_refused_before_anything_is_written(
    local_data: Path, tmp_path: Path, damage, code: str  # type: ignore[no-untyped-def]
) -> None:
    backup(local_data, tmp_path / "backup")
    damage(tmp_path / "backup")
    with pytest.raises(BackupError) as refused:
        restore(tmp_path / "backup", tmp_path / "restored")
    assert refused.value.code == code
    assert not (tmp_path / "restored").exists() or not any((tmp_path / "restored").rglob("*.*"))


def test_a_restore_never_overwrites_a_database(local_data: Path, tmp_path: Path) -> None:
    backup(local_data, tmp_path / "backup")
    with pytest.raises(BackupError) as refused:
        restore(tmp_path / "backup", local_data)
    assert refused.value.code == "RESTORE_TARGET_NOT_EMPTY"


def test_an_upgrade_backs_up_first_and_a_restore_upgrades_an_older_schema(tmp_path: Path) -> None:
    older = known_revisions()[-2]
    local_data = tmp_path / "local-data"
    upgrade(local_data / DATABASE, older)
    env = {"LOCAL_DATA": str(local_data)}

    result = CliRunner().invoke(main, ["db", "upgrade"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert current_revision(local_data / DATABASE) == head()
    (before,) = (local_data / "backups").iterdir()
    assert read_manifest(before).schema == older and current_revision(before / DATABASE) == older
    again = CliRunner().invoke(main, ["db", "upgrade"], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and len(list((local_data / "backups").iterdir())) == 1, "nothing to migrate"

    restored = tmp_path / "restored"
    result = CliRunner().invoke(main, ["restore", str(before)], env={"LOCAL_DATA": str(restored)})
    assert result.exit_code == 0, result.output
    assert current_revision(restored / DATABASE) == head()
    refused = CliRunner().invoke(main, ["restore", str(before)], env={"LOCAL_DATA": str(restored)})
    assert refused.exit_code == 1 and "RESTORE_TARGET_NOT_EMPTY" in refused.output
