"""What a drive connector offers: a folder's metadata, its files page by page, one file's bytes.

A notebook may link folders of an external drive (docs/decisions/0020); the sync compares each
listed file's modified time with what it saw last and downloads only what changed. Connectors
are pure (no Flask, no Celery, no database): they get their settings and credentials as values.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from collections.abc import Iterable
from typing import BinaryIO, Protocol

from pipeline.types import PipelineError


# The stable reasons a connector fails with (``PipelineError.code``).
DRIVE_NOT_AUTHORIZED = "DRIVE_NOT_AUTHORIZED"  # no authorisation, or it expired / was revoked
FOLDER_UNAVAILABLE = "FOLDER_UNAVAILABLE"  # moved, deleted, permissions changed, or a transient error
FOLDER_NOT_ALLOWED = "FOLDER_NOT_ALLOWED"  # outside the operator's roots (the folder connector)
FILE_UNAVAILABLE = "FILE_UNAVAILABLE"  # listed, then gone or unreadable when downloaded
FILE_TOO_LARGE = "FILE_TOO_LARGE"
BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class FolderInfo:
    """A folder as its drive names it."""

    id: str
    name: str


@dataclass(frozen=True)
class RemoteFile:
    """One file of a folder. ``modified_time`` is timezone-aware UTC; the sync compares it for
    equality with the last one it saw, never ordering, so a file put back to an older version
    counts as changed too."""

    id: str
    name: str
    modified_time: datetime
    size: int | None
    mime_type: str | None


@dataclass(frozen=True)
class FilePage:
    files: list[RemoteFile]
    next_page_token: str | None


class Connector(Protocol):
    """One drive. Every method raises ``PipelineError`` with one of the codes above."""

    name: str

    def folder(self, folder_id: str) -> FolderInfo:
        """The folder's metadata; ``FOLDER_UNAVAILABLE`` when it cannot be read, which makes the
        sync keep that folder's documents (an unreadable folder is not an empty one)."""
        ...

    def list_files(self, folder_id: str, page_token: str | None = None) -> FilePage:
        """One page of the folder's files (not its subfolders), in a stable order."""
        ...

    def download(self, folder_id: str, file_id: str, into: BinaryIO, max_bytes: int) -> int:
        """Write the bytes of file ``file_id`` of folder ``folder_id`` into ``into`` and return
        how many; ``FILE_TOO_LARGE`` past ``max_bytes`` (what was written is then to be
        discarded). The folder is named because a file id need not be unique across folders (the
        folder connector's is the file's name) and a file moved out of the folder since it was
        listed is no longer the folder's to sync."""
        ...

    def close(self) -> None:
        """Let go of what the connector holds (an HTTP client's connections)."""
        ...


def all_files(connector: Connector, folder_id: str) -> list[RemoteFile]:
    """Every file of the folder, following the pages."""
    files: list[RemoteFile] = []
    token: str | None = None
    while True:
        page = connector.list_files(folder_id, token)
        files.extend(page.files)
        token = page.next_page_token
        if not token:
            return files



def copy_capped(blocks: Iterable[bytes], into: BinaryIO, max_bytes: int, what: str) -> int:
    """Write ``blocks`` into ``into`` and return how many bytes; ``FILE_TOO_LARGE`` (naming
    ``what``) as soon as they pass ``max_bytes``."""
    written = 0
    for block in blocks:
        written += len(block)
        if written > max_bytes:
            raise PipelineError(FILE_TOO_LARGE, f"{what} is larger than {max_bytes} bytes.")
        into.write(block)
    return written
