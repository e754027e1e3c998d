"""One sync of a linked folder, and one sync round over several (docs/decisions/0020).

The comparison is pipeline.folder_sync's; here it meets the drive (the connector), the blob
store (downloads are kept by content hash, so the notebook's job reads them like attachments)
and the database (one short transaction per download, so a round that dies keeps what it did).
"""
from __future__ import annotations

import logging
from collections import Counter
from contextlib import closing
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import groupby

from app.extensions import Services
from app.services.drive_connectors import GOOGLE_DRIVE, connector_for, note_refused
from app.services.ingest import request_ingest
from pipeline.connectors.base import DRIVE_NOT_AUTHORIZED, Connector, RemoteFile, all_files
from pipeline.connectors.google_drive import DRIVE_UNAVAILABLE
from pipeline.folder_sync import KnownDocument, plan_folder
from pipeline.types import PipelineError
from storage import linked
from storage.linked import Download
from storage.models import LinkedFolder, SyncRun, utcnow

log = logging.getLogger(__name__)


@dataclass
class FolderOutcome:
    notebook_id: str | None
    counts: Counter[str] = field(default_factory=Counter)
    # Members whose file changed since their last download: extracted again even when the new
    # bytes are the old ones (the seed: a touched file that had failed is tried again).
    refetched: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.counts["downloaded"] or self.counts["deleted"])


def sync_folder(svc: Services, folder_id: str, heartbeat: Callable[[], None] = lambda: None) -> FolderOutcome:
    """Compare the folder with its documents, download what is new or changed, drop what is gone.

    A folder that cannot be read (moved, permissions, the drive down, the authorisation revoked)
    is skipped whole: its documents stay as they are. ``heartbeat`` is called after each download
    (a round's lease must outlast a folder of large files).
    """
    with svc.db.reader() as session:
        folder = session.get(LinkedFolder, folder_id)
        if folder is None:  # unlinked since the round was planned
            return FolderOutcome(None)
        known = [KnownDocument(d.id, d.file_id, d.modified_time) for d in linked.documents(session, [folder_id])]
        session.expunge(folder)
    outcome = FolderOutcome(folder.notebook_id)
    credentials_read = utcnow()
    try:
        with closing(connector_for(svc, folder.connector, folder.linked_by)) as connector:
            return _sync_listed(svc, folder, known, connector, outcome, heartbeat)
    except PipelineError as err:
        log.warning("sync of linked folder %s skipped: %s %s", folder_id, err.code, err.message)
        if err.code == DRIVE_NOT_AUTHORIZED and folder.connector == GOOGLE_DRIVE:
            note_refused(svc, folder.linked_by, credentials_read)
        with svc.db.session() as session:
            linked.mark_synced(session, folder_id, outcome="skipped", error_code=err.code, error=err.message)
        outcome.counts["skipped_folders"] += 1
        return outcome


def _sync_listed(
    svc: Services, folder: LinkedFolder, known: list[KnownDocument], connector: Connector, outcome: FolderOutcome,
    heartbeat: Callable[[], None],
) -> FolderOutcome:
    """Read the folder, download what changed, then drop what is gone; a ``PipelineError`` of the
    folder (not of one file) stops it before anything is deleted."""
    connector.folder(folder.folder_id)
    listed = all_files(connector, folder.folder_id)
    plan = plan_folder(known, listed)
    outcome.counts.update(checked=len(listed), unchanged=len(plan.unchanged))
    known_files = {document.file_id for document in known}
    for remote in plan.download:
        document = None
        for _ in range(2):
            download = _download(svc, connector, folder.folder_id, remote)
            with svc.db.session() as session:
                current = session.get(LinkedFolder, folder.id)
                if current is None:  # unlinked meanwhile
                    return outcome
                document = linked.record_download(session, current, download)
            # Until the row named them, the bytes were nobody's: a release of the same hash (an
            # old revision pruned) may have deleted them. Referenced now, a second copy stays.
            if download.content_hash is None or svc.blobs.has(download.content_hash):
                break
        if download.content_hash and remote.id in known_files:
            outcome.refetched.append(linked.member_id(document.id))
        outcome.counts["downloaded" if download.content_hash else "failed"] += 1
        heartbeat()
    with svc.db.session() as session:
        leaving = set(plan.gone)
        gone = [d for d in linked.documents(session, [folder.id]) if d.id in leaving]
        linked.remove_documents(session, folder.notebook_id, gone)
        linked.mark_synced(session, folder.id, outcome="ok")
    outcome.counts["deleted"] += len(gone)
    return outcome


def _download(svc: Services, connector: Connector, folder_id: str, remote: RemoteFile) -> Download:
    """The file's bytes kept in the blob store, or why not; a revoked authorisation stops the
    whole folder (every later file would fail alike)."""
    limit = svc.settings.attachment_max_bytes
    try:
        content_hash, _ = svc.blobs.put_stream(lambda into: connector.download(folder_id, remote.id, into, limit))
    except PipelineError as err:
        if err.code == DRIVE_NOT_AUTHORIZED:
            raise
        # Drive refused for a moment (rate limit, 5xx): the next round tries again, changed or not.
        return Download(remote, error_code=err.code, error=err.message, transient=err.code == DRIVE_UNAVAILABLE)
    return Download(remote, content_hash=content_hash)


def run_round(svc: Services, run_id: str) -> None:
    """Sync each folder of the round, then ask for an ingestion of each notebook that changed
    (also when a later folder failed: what was downloaded is indexed).

    The round's row is read (and its lease extended) before each folder and after each download:
    a round whose row says it is no longer running stops at the next folder.
    """
    lease = timedelta(seconds=svc.settings.job_lease_seconds)
    counts: Counter[str] = Counter()
    changed: dict[str, list[str]] = {}
    owner_id = ""

    def renewed() -> bool:
        with svc.db.session() as session:
            return linked.renew(session, run_id, lease, counts) is not None

    try:
        with svc.db.reader() as session:
            run = session.get(SyncRun, run_id)
            folder_ids, owner_id = (list(run.folder_ids), run.owner_id) if run is not None else ([], "")
        for folder_id in folder_ids:
            if not renewed():
                return
            outcome = sync_folder(svc, folder_id, heartbeat=renewed)
            counts.update(outcome.counts)
            if outcome.changed and outcome.notebook_id:
                changed.setdefault(outcome.notebook_id, []).extend(outcome.refetched)
    except Exception as err:
        log.exception("sync round %s failed", run_id)
        with svc.db.session() as session:
            linked.finish_run(session, run_id, "failed", counts, f"{type(err).__name__}: {err}")
        raise
    finally:
        _ingest_changes(svc, owner_id, changed)
    with svc.db.session() as session:
        linked.finish_run(session, run_id, "done", counts)


def _ingest_changes(svc: Services, owner_id: str, changed: dict[str, list[str]]) -> None:
    """Ask each changed notebook for an ingestion; a member whose file changed is extracted again
    (forced: its bytes may be the ones that failed before)."""
    for notebook_id, refetched in sorted(changed.items()):
        if refetched:
            request_ingest(svc, notebook_id, requested_by=owner_id, params={"force_resource_ids": refetched})
        else:
            request_ingest(svc, notebook_id, requested_by=owner_id, only_if_changed=True, explicit=True)


def start_due_rounds(svc: Services) -> list[str]:
    """One scheduled round per owner, scope and source over their folders that are due; each
    folder's next time is set in the same transaction, so two ticks never both take it."""
    lease = timedelta(seconds=svc.settings.job_lease_seconds)

    def owner(folder: LinkedFolder) -> tuple[str, str, str, str]:
        return folder.linked_by, folder.vault_hash, folder.workspace_id, folder.connector

    with svc.db.session() as session:
        due = sorted(linked.claim_due(session, utcnow()), key=owner)
        runs = [
            linked.start_run(
                session, owner_id=owner_id, vault_hash=vault_hash, workspace_id=workspace_id, trigger="scheduled",
                connector=connector, folder_ids=[f.id for f in folders], lease=lease,
            )
            for (owner_id, vault_hash, workspace_id, connector), folders in groupby(due, key=owner)
        ]
        return [run.id for run in runs]
