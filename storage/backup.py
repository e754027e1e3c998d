"""Online backups of an instance's LOCAL_DATA, and restores that check everything before they write.

A backup holds what a restored instance needs to serve the same notebooks, citations and
conversations: the database (copied with SQLite's backup API, consistent while the service runs
and writes), the secrets that keep sign-ins and remote workers valid, the kept attachment bytes
that citations open (``blobs``) and the extraction cache (so nothing is extracted again). It
leaves out what is in transit or rebuilt: the embedded broker's messages (a job's work is sent
again from its rows), the spool of evidence packs, locks and schedules. The vault is the user's
own folder, backed up with it.

Blobs and cached extractions never change once written (new content gets a new name), so a
backup on the same filesystem hard-links them instead of copying. A blob that retention deletes
between the database copy and the file copy is missing from the backup; its citations answer
``SOURCE_BYTES_GONE`` after a restore, like any source whose bytes are no longer kept.

The manifest, written last, lists every file with its size and SHA-256, and the schema revision of
the database: a folder without one is an unfinished backup.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from pipeline.fingerprint import file_sha256
from storage.files import durable_replace, sync_folder, sync_tree
from storage.migrate import current_revision, known_revisions

FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "system/notebooks.sqlite3"
SECRETS = ("system/session-key", "system/internal-token")
TREES = ("blobs", "system/extractions")
_TOP_LEVEL = {"system", "blobs"}


class BackupError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class BackedUpFile:
    path: str  # relative to LOCAL_DATA, with forward slashes
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format: int
    created_at: str
    schema: str
    files: list[BackedUpFile]

    @property
    def size(self) -> int:
        return sum(entry.size for entry in self.files)


def backup(local_data: Path, target: Path) -> Manifest:
    """Back up ``local_data`` into ``target`` (new or empty); returns the manifest written."""
    database = local_data / DATABASE
    if not database.is_file():
        raise BackupError("NOTHING_TO_BACK_UP", f"There is no database at {database}.")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError("BACKUP_TARGET_NOT_EMPTY", f"{target} exists and is not an empty folder.")
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    (target / "system").mkdir(mode=0o700, exist_ok=True)
    _copy_database(database, target / DATABASE)
    for relative in SECRETS:
        if (local_data / relative).is_file():
            shutil.copy2(local_data / relative, target / relative)
    for tree in TREES:
        for path in _files(local_data / tree):
            _link_or_copy(path, target / path.relative_to(local_data))
    schema = current_revision(target / DATABASE)
    if schema is None:
        raise BackupError("NOTHING_TO_BACK_UP", f"The database at {database} was never migrated.")
    files = [_describe(target, path) for path in sorted(_files(target)) if path.name != MANIFEST]
    manifest = Manifest(FORMAT, datetime.now(UTC).isoformat(timespec="seconds"), schema, files)
    sync_tree(target)  # the manifest says the backup is finished: only once its files are on disk
    partial = target / f"{MANIFEST}.part"
    partial.write_text(json.dumps(asdict(manifest), indent=1))
    durable_replace(partial, target / MANIFEST)
    return manifest


def read_manifest(source: Path) -> Manifest:
    try:
        document = json.loads((source / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError("BACKUP_INCOMPLETE", f"{source} has no {MANIFEST}: not a finished backup.") from None
    except (OSError, ValueError) as err:
        raise BackupError("BACKUP_CORRUPT", f"{source / MANIFEST} cannot be read: {err}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise BackupError("BACKUP_FORMAT_UNKNOWN", f"{source} was written in a backup format this version does not read.")
    try:
        files = [BackedUpFile(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in document["files"]]
        return Manifest(FORMAT, str(document["created_at"]), str(document["schema"]), files)
    except (KeyError, TypeError, ValueError) as err:
        raise BackupError("BACKUP_CORRUPT", f"{source / MANIFEST} is malformed: {err!r}") from None


def restore(source: Path, local_data: Path) -> Manifest:
    """Restore the backup at ``source`` into ``local_data``, which must hold no database.

    Nothing is written until the schema is known and every file is whole; the database is
    placed last, so a restore that stops halfway leaves no database and can simply be run again.
    The caller upgrades a database from an older schema.
    """
    manifest = read_manifest(source)
    known = known_revisions()
    if manifest.schema not in known:
        raise BackupError(
            "SCHEMA_MISMATCH",
            f"The backup's database is at schema {manifest.schema}, which this version does not know "
            f"(it knows {known[0]} to {known[-1]}): restore it with the version that made it.",
        )
    if (local_data / DATABASE).exists():
        raise BackupError(
            "RESTORE_TARGET_NOT_EMPTY", f"{local_data} already holds a database: restore into a fresh LOCAL_DATA."
        )
    for entry in manifest.files:
        _check(source, entry)
    if DATABASE not in {entry.path for entry in manifest.files}:
        raise BackupError("BACKUP_CORRUPT", f"The manifest of {source} lists no database.")
    (local_data / "system").mkdir(parents=True, exist_ok=True, mode=0o700)
    for entry in manifest.files:
        if entry.path != DATABASE:
            _restoring(source, local_data, entry.path).rename(local_data / entry.path)
    # The database comes last, once every file it names is on the disk, and so do their folders.
    sync_tree(local_data)
    sync_folder(local_data.parent)
    durable_replace(_restoring(source, local_data, DATABASE), local_data / DATABASE)
    return manifest


def _restoring(source: Path, local_data: Path, path: str) -> Path:
    """A copy of the backed-up file ``path`` beside its place, to be renamed into it."""
    target = local_data / path
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".restoring")
    shutil.copy2(source / path, partial)
    return partial


def _copy_database(database: Path, target: Path) -> None:
    """A consistent copy while other processes write (WAL readers do not block writers), as one
    self-contained file."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as live, closing(sqlite3.connect(target)) as copy:
        live.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")


def _files(root: Path) -> Iterator[Path]:
    """The files under ``root``, without writes in progress (``*.part``, ``*.restoring``)."""
    if not root.is_dir():
        return
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.endswith((".part", ".restoring")):
                yield Path(directory) / name


def _link_or_copy(path: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(path, target)
    except FileNotFoundError:  # retention deleted it meanwhile (see the module docstring)
        return
    except OSError:  # another filesystem, or one without hard links
        try:
            shutil.copy2(path, target)
        except FileNotFoundError:
            return


def _describe(root: Path, path: Path) -> BackedUpFile:
    return BackedUpFile(path.relative_to(root).as_posix(), path.stat().st_size, file_sha256(path))


def _check(source: Path, entry: BackedUpFile) -> None:
    """The entry names a file inside the backup's own layout, and that file is whole."""
    relative = PurePosixPath(entry.path)
    if relative.is_absolute() or ".." in relative.parts or relative.parts[:1] not in {(top,) for top in _TOP_LEVEL}:
        raise BackupError("BACKUP_CORRUPT", f"The manifest names a path outside LOCAL_DATA's layout: {entry.path!r}.")
    path = source / relative
    if not path.is_file():
        raise BackupError("BACKUP_CORRUPT", f"{entry.path} is listed in the manifest but missing from the backup.")
    if path.stat().st_size != entry.size or file_sha256(path) != entry.sha256:
        raise BackupError("BACKUP_CORRUPT", f"{entry.path} does not match its checksum: the backup is damaged.")
