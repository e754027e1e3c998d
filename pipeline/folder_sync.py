"""What one sync of a linked folder does, decided from a listing and what the notebook holds.

Pure: the knowledge-base sync's rules (docs/decisions/0020) in one function, testable without a
drive or a database:

- a file whose modified time is the one seen last is skipped: no download, no extraction, even
  when its document failed (only the retry endpoint, or a change to the file, tries it again);
- a changed or new file is downloaded (and then extracted and indexed by the notebook's job);
- a file no longer listed loses its document. An accessible folder that lists nothing loses
  all of them; a folder whose metadata cannot be read never gets here (the caller skips the
  deletion: unreadable is not empty).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pipeline.connectors.base import RemoteFile


@dataclass(frozen=True)
class KnownDocument:
    """A document the notebook holds for a file of the folder; ``modified_time`` is the drive's
    (naive UTC) for the bytes held or the download that failed, None to force a download."""

    document_id: str
    file_id: str
    modified_time: datetime | None


@dataclass(frozen=True)
class FolderPlan:
    download: list[RemoteFile]  # new or changed
    unchanged: list[str]  # document ids
    gone: list[str]  # document ids


def plan_folder(known: list[KnownDocument], listed: list[RemoteFile]) -> FolderPlan:
    by_file = {document.file_id: document for document in known}
    download, unchanged = [], []
    for remote in listed:
        document = by_file.get(remote.id)
        if document is not None and document.modified_time == naive_utc(remote.modified_time):
            unchanged.append(document.document_id)
        else:
            download.append(remote)
    listed_ids = {remote.id for remote in listed}
    gone = [document.document_id for document in known if document.file_id not in listed_ids]
    return FolderPlan(download, unchanged, gone)


def naive_utc(moment: datetime) -> datetime:
    """The database's convention (storage.models.utcnow): naive UTC."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
