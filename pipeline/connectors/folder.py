"""A folder of the server's own file system as a drive (a mounted share, a synced directory).

The operator names the roots a notebook may link folders under (``GNOSI_SYNC_FOLDER_ROOTS``);
a folder id is an absolute path, untrusted like an attachment path (``pipeline.catalogue.paths``):
it is resolved with every symlink followed and refused when its real location leaves the roots.
Only regular files directly in the folder are its files; a symlink counts only while its target
stays inside the folder's root, so a link cannot bring a file from elsewhere into a notebook.
"""
from __future__ import annotations

import base64
import mimetypes
import os
import stat
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import BinaryIO

from pipeline.connectors.base import (
    BLOCK_BYTES,
    FILE_UNAVAILABLE,
    FOLDER_NOT_ALLOWED,
    FOLDER_UNAVAILABLE,
    FilePage,
    FolderInfo,
    RemoteFile,
    copy_capped,
)
from pipeline.types import PipelineError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FolderConnector:
    """Folders under the operator's roots; a file's id is its name within its folder."""

    name = "folder"

    def __init__(self, roots: tuple[Path, ...], page_size: int = 100) -> None:
        self._roots = tuple(root.resolve() for root in roots)
        self._page_size = page_size

    def allowed_folder(self, path_text: str) -> Path:
        """The real path of folder ``path_text`` when it lies inside one of the roots, so a link
        can be refused when it is made and not only at its first sync. The folder need not exist
        (``folder`` says whether it can be read)."""
        if not self._roots:
            raise PipelineError(
                FOLDER_NOT_ALLOWED,
                "No local folder may be linked: the operator has not set GNOSI_SYNC_FOLDER_ROOTS.",
            )
        if "\x00" in path_text or not Path(path_text).is_absolute():
            raise PipelineError(FOLDER_NOT_ALLOWED, f"folder {path_text[:200]!r} is not an absolute path")
        try:
            real = Path(path_text).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise PipelineError(FOLDER_UNAVAILABLE, f"folder {path_text[:200]!r} cannot be resolved") from exc
        if not self._roots_of(real):
            raise PipelineError(
                FOLDER_NOT_ALLOWED,
                f"folder {path_text[:200]!r} is outside the folders the operator allows (GNOSI_SYNC_FOLDER_ROOTS)",
            )
        return real

    def close(self) -> None:
        """Nothing to let go of: every call opens and closes its own files."""

    def folder(self, folder_id: str) -> FolderInfo:
        real = self.allowed_folder(folder_id)
        try:
            with os.scandir(real):  # opening it is what proves it readable
                pass
        except OSError as exc:  # missing, not a directory, permission denied
            raise _folder_unavailable(real) from exc
        return FolderInfo(id=str(real), name=real.name or str(real))

    def list_files(self, folder_id: str, page_token: str | None = None) -> FilePage:
        real = self.allowed_folder(folder_id)
        after = _name_after(page_token)
        roots = self._roots_of(real)
        page: list[RemoteFile] = []
        try:
            for name in sorted(os.listdir(real)):
                if after is not None and name <= after:
                    continue
                found = _listed_file(real / name, roots)
                if found is None:
                    continue
                if len(page) == self._page_size:  # one more exists: the page is full, not last
                    return FilePage(page, _token_after(page[-1].name))
                page.append(found)
        except OSError as exc:
            raise _folder_unavailable(real) from exc
        return FilePage(page, None)

    def download(self, folder_id: str, file_id: str, into: BinaryIO, max_bytes: int) -> int:
        real = self.allowed_folder(folder_id)
        if not _is_plain_name(file_id):
            raise PipelineError(FILE_UNAVAILABLE, f"{file_id[:200]!r} is not a file name of the folder")
        roots = self._roots_of(real)
        try:
            target = (real / file_id).resolve()
            if not _inside(target, roots):
                raise PipelineError(FILE_UNAVAILABLE, f"{file_id[:200]!r} leads out of the folder's root")
            # The resolved path has no symlink left: O_NOFOLLOW refuses one swapped in since, and
            # O_NONBLOCK keeps a FIFO swapped in from holding the open.
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as source:
                if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
                    raise PipelineError(FILE_UNAVAILABLE, f"{file_id[:200]!r} is not a regular file")
                return copy_capped(iter(partial(source.read, BLOCK_BYTES), b""), into, max_bytes, repr(file_id[:200]))
        except (OSError, RuntimeError) as exc:  # gone, unreadable, or a symlink loop
            raise PipelineError(FILE_UNAVAILABLE, f"{file_id[:200]!r} cannot be read") from exc

    def _roots_of(self, real: Path) -> tuple[Path, ...]:
        return tuple(root for root in self._roots if real.is_relative_to(root))


def _listed_file(path: Path, roots: tuple[Path, ...]) -> RemoteFile | None:
    """``path`` as a file of its folder, or None when the folder does not count it: a dotfile,
    a name that is not UTF-8 (no record could hold it), not a regular file, gone since the folder
    was read, or a symlink that does not lead to a readable file inside ``roots``. Any other
    error reading the entry is the folder's (``OSError``): its permissions changed while listed."""
    if path.name.startswith(".") or not _is_utf8(path.name):
        return None
    try:
        info = path.lstat()
    except FileNotFoundError:  # removed since the folder was read
        return None
    if stat.S_ISLNK(info.st_mode):
        info = _link_target_stat(path, roots)
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    return RemoteFile(
        id=path.name,
        name=path.name,
        modified_time=_EPOCH + timedelta(microseconds=info.st_mtime_ns // 1000),
        size=info.st_size,
        mime_type=mimetypes.guess_type(path.name)[0],
    )


def _link_target_stat(link: Path, roots: tuple[Path, ...]) -> os.stat_result | None:
    """What ``link`` points at, or None when that leaves ``roots``, is missing, loops or cannot
    be read: one bad link is skipped, not taken for the whole folder being unreadable."""
    try:
        target = link.resolve()
        return target.stat() if _inside(target, roots) else None
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None


def _inside(target: Path, roots: tuple[Path, ...]) -> bool:
    return any(target.is_relative_to(root) for root in roots)


def _is_plain_name(file_id: str) -> bool:
    """A name directly in the folder: no separator, no ``..``, no dotfile (never listed)."""
    separators = {"/", "\x00", os.sep, os.altsep or os.sep}
    return bool(file_id) and not file_id.startswith(".") and not any(c in file_id for c in separators)


def _is_utf8(name: str) -> bool:
    """False for a name the file system gave as undecodable bytes (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _token_after(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii")


def _name_after(page_token: str | None) -> str | None:
    """The last name of the previous page; names sort the folder, so the page goes on after it
    even when files were added or removed in between."""
    if page_token is None:
        return None
    try:
        return base64.urlsafe_b64decode(page_token.encode("ascii")).decode("utf-8")
    except ValueError as exc:  # not base64, or not text
        raise PipelineError(FOLDER_UNAVAILABLE, "the page token is not one this connector gave") from exc


def _folder_unavailable(real: Path) -> PipelineError:
    return PipelineError(FOLDER_UNAVAILABLE, f"folder {str(real)[:200]!r} is missing or cannot be read")
