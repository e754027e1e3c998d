"""Linked drive folders, their documents and sync rounds (docs/decisions/0020).

A linked folder's file is a notebook member ``linked:<document id>`` as soon as its bytes are
held; the row is one per folder and file (a unique key), written with an upsert, so that a
scheduled round and a "sync now" that meet on the same folder never make two of anything.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from pipeline.connectors.base import RemoteFile
from pipeline.folder_sync import naive_utc
from storage.models import LinkedDocument, LinkedFolder, Notebook, NotebookResource, SyncRun, new_id, utcnow
from storage.scope import Principal

MEMBER_PREFIX = "linked:"


def member_id(document_id: str) -> str:
    return MEMBER_PREFIX + document_id


def document_id_of(resource_id: str) -> str | None:
    return resource_id.removeprefix(MEMBER_PREFIX) if resource_id.startswith(MEMBER_PREFIX) else None


def source_value(document: LinkedDocument) -> str:
    """What the member's source is keyed by: the document, and its name, which the extractors
    are told and citations show (a renamed file is a new source of the same member)."""
    return f"{document.id}/{document.name}"


def link(
    session: Session, principal: Principal, notebook: Notebook, *, connector: str, folder_id: str, folder_name: str,
    schedule_seconds: int | None,
) -> LinkedFolder | None:
    """The new link, or None when the notebook already follows that folder."""
    exists = session.scalar(
        select(LinkedFolder.id).where(
            LinkedFolder.notebook_id == notebook.id, LinkedFolder.connector == connector, LinkedFolder.folder_id == folder_id
        )
    )
    if exists:
        return None
    folder = LinkedFolder(
        vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
        connector=connector, folder_id=folder_id, folder_name=folder_name, schedule_seconds=schedule_seconds,
        linked_by=principal.user_id,
    )
    set_schedule(folder, schedule_seconds)  # its first round is the one linking starts
    session.add(folder)
    session.flush()
    return folder


def set_schedule(folder: LinkedFolder, seconds: int | None) -> None:
    folder.schedule_seconds = seconds
    folder.next_sync_at = utcnow() + timedelta(seconds=seconds) if seconds else None


def folders(session: Session, notebook_ids: Iterable[str], connectors: tuple[str, ...] | None = None) -> list[LinkedFolder]:
    query = select(LinkedFolder).where(LinkedFolder.notebook_id.in_(list(notebook_ids)))
    if connectors is not None:
        query = query.where(LinkedFolder.connector.in_(connectors))
    return list(session.scalars(query.order_by(LinkedFolder.created_at, LinkedFolder.id)))


def folders_of_scope(
    session: Session, vault_hash: str, workspace_id: str, connectors: tuple[str, ...]
) -> list[LinkedFolder]:
    return list(session.scalars(select(LinkedFolder).where(
        LinkedFolder.vault_hash == vault_hash, LinkedFolder.workspace_id == workspace_id,
        LinkedFolder.connector.in_(connectors),
    )))


def folder_of(session: Session, notebook: Notebook, link_id: str) -> LinkedFolder | None:
    return session.scalar(select(LinkedFolder).where(LinkedFolder.id == link_id, LinkedFolder.notebook_id == notebook.id))


def unlink(session: Session, folder: LinkedFolder) -> None:
    """Remove the folder's documents from its notebook (only), then the link itself."""
    remove_documents(session, folder.notebook_id, documents(session, [folder.id]))
    session.delete(folder)


def documents(session: Session, folder_ids: Iterable[str]) -> list[LinkedDocument]:
    return list(session.scalars(
        select(LinkedDocument).where(LinkedDocument.linked_folder_id.in_(list(folder_ids)))
        .order_by(LinkedDocument.name, LinkedDocument.id)
    ))


def document_counts(session: Session, folder_ids: Iterable[str]) -> dict[str, int]:
    rows = session.execute(
        select(LinkedDocument.linked_folder_id, func.count()).where(LinkedDocument.linked_folder_id.in_(list(folder_ids)))
        .group_by(LinkedDocument.linked_folder_id)
    )
    return {folder_id: count for folder_id, count in rows}


def notebook_documents(session: Session, notebook_id: str, ids: Iterable[str] | None = None) -> list[LinkedDocument]:
    query = select(LinkedDocument).where(LinkedDocument.notebook_id == notebook_id)
    if ids is not None:
        query = query.where(LinkedDocument.id.in_(list(ids)))
    return list(session.scalars(query.order_by(LinkedDocument.name, LinkedDocument.id)))


def titles(session: Session, notebook_id: str) -> dict[str, str]:
    """The members' names, as the drive names the files."""
    rows = session.execute(select(LinkedDocument.id, LinkedDocument.name).where(LinkedDocument.notebook_id == notebook_id))
    return {member_id(document_id): name for document_id, name in rows}


@dataclass(frozen=True)
class Download:
    """What a sync learnt about one listed file: its bytes' hash, or why they could not be had."""

    remote: RemoteFile
    content_hash: str | None = None
    error_code: str | None = None
    error: str | None = None
    # A failure of the moment (the drive busy): the modified time is not taken, so the next round
    # downloads the file again.
    transient: bool = False


def record_download(session: Session, folder: LinkedFolder, download: Download) -> LinkedDocument:
    """Insert or update the file's row (one per folder and file, whoever writes it) and make the
    document a member once its bytes are held. A failed download keeps the bytes held before,
    if any, and records the modified time it failed at: an unchanged file is not tried again
    (unless the failure was of the moment)."""
    remote, now = download.remote, utcnow()
    values = {
        "name": remote.name[:500], "mime": remote.mime_type, "size": remote.size,
        "modified_time": naive_utc(remote.modified_time), "error_code": download.error_code,
        "error": download.error[:500] if download.error else None, "synced_at": now,
    }
    if download.content_hash is not None:
        values["content_hash"] = download.content_hash
    inserted = {**values, "modified_time": None} if download.transient else values
    if download.transient:
        del values["modified_time"]
    statement = insert(LinkedDocument).values(
        id=new_id(), vault_hash=folder.vault_hash, workspace_id=folder.workspace_id,
        linked_folder_id=folder.id, notebook_id=folder.notebook_id, file_id=remote.id, created_at=now, **inserted,
    ).on_conflict_do_update(index_elements=["linked_folder_id", "file_id"], set_=values)
    session.execute(statement)
    document = session.scalars(
        select(LinkedDocument).where(LinkedDocument.linked_folder_id == folder.id, LinkedDocument.file_id == remote.id)
        .execution_options(populate_existing=True)
    ).one()
    if document.content_hash is not None:
        _add_member(session, folder, document)
    return document


def _add_member(session: Session, folder: LinkedFolder, document: LinkedDocument) -> None:
    session.execute(
        insert(NotebookResource).values(
            vault_hash=folder.vault_hash, workspace_id=folder.workspace_id, notebook_id=folder.notebook_id,
            resource_id=member_id(document.id), added_by=folder.linked_by, added_at=utcnow(), failures=0,
        ).on_conflict_do_nothing()
    )


def remove_documents(session: Session, notebook_id: str, gone: list[LinkedDocument]) -> None:
    """Delete the documents and their membership of their notebook (their evidence is hidden at
    once; the next revision drops it)."""
    if not gone:
        return
    session.execute(delete(NotebookResource).where(
        NotebookResource.notebook_id == notebook_id, NotebookResource.resource_id.in_([member_id(d.id) for d in gone])
    ))
    session.execute(delete(LinkedDocument).where(LinkedDocument.id.in_([d.id for d in gone])))
    session.execute(update(Notebook).where(Notebook.id == notebook_id).values(updated_at=utcnow()))


def forget_failures(documents_to_retry: list[LinkedDocument]) -> None:
    """Make the next sync download these failed files again, changed or not."""
    for document in documents_to_retry:
        document.modified_time = None


def mark_synced(session: Session, folder_id: str, *, outcome: str, error_code: str | None = None, error: str | None = None) -> None:
    folder = session.get(LinkedFolder, folder_id)
    if folder is None:
        return
    folder.last_sync_at = utcnow()
    folder.last_sync_outcome = outcome
    folder.last_sync_error_code = error_code
    folder.last_sync_error = error[:500] if error else None


def claim_due(session: Session, now: datetime) -> list[LinkedFolder]:
    """Folders whose scheduled round is due; each is moved to its next time in the same
    transaction, so two schedulers' ticks never both take it."""
    due = list(session.scalars(
        select(LinkedFolder).where(LinkedFolder.schedule_seconds.is_not(None), LinkedFolder.next_sync_at <= now)
    ))
    for folder in due:
        folder.next_sync_at = now + timedelta(seconds=folder.schedule_seconds or 0)
    return due


def start_run(
    session: Session, *, owner_id: str, vault_hash: str, workspace_id: str, trigger: str, connector: str,
    folder_ids: list[str], lease: timedelta,
) -> SyncRun:
    run = SyncRun(
        vault_hash=vault_hash, workspace_id=workspace_id, owner_id=owner_id, trigger=trigger, connector=connector,
        folder_ids=folder_ids, state="running", counts={}, lease_expires_at=utcnow() + lease,
    )
    session.add(run)
    session.flush()
    return run


def running(session: Session, owner_id: str, trigger: str) -> SyncRun | None:
    """The owner's run of that kind still under way (one whose worker died stops counting when
    its lease passes)."""
    return session.scalar(
        select(SyncRun).where(
            SyncRun.owner_id == owner_id, SyncRun.trigger == trigger, SyncRun.state == "running",
            SyncRun.lease_expires_at > utcnow(),
        ).limit(1)
    )


def renew(session: Session, run_id: str, lease: timedelta, counts: dict[str, int]) -> SyncRun | None:
    """The run, its lease extended and its counts so far recorded; None once it is not running."""
    run = session.get(SyncRun, run_id)
    if run is None or run.state != "running":
        return None
    run.lease_expires_at = utcnow() + lease
    run.counts = dict(counts)
    return run


def finish_run(session: Session, run_id: str, state: str, counts: dict[str, int], error: str | None = None) -> None:
    run = session.get(SyncRun, run_id)
    if run is None:
        return
    run.state, run.counts, run.finished_at = state, dict(counts), utcnow()
    run.error = error[:500] if error else None

