"""Plan a "sync now" call: which knowledge bases (notebooks) and folders it covers, what it skips
and why, whether it may start (docs/decisions/0020).

The answer comes right after this planning; the round itself runs on a worker (tasks.sync), so
what the caller hears is "accepted", not "updated". ``matched_doc_count`` is how many documents
this round will check, not how many will change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kombu.exceptions import KombuError
from sqlalchemy.orm import Session

from app.errors import ApiError
from app.extensions import Services
from app.services.drive_connectors import GOOGLE_DRIVE, drive_authorized
from storage import linked, notebooks
from storage.models import LinkedFolder, Notebook
from storage.scope import Principal
from tasks.sync import dispatch_round

NOT_FOUND = {
    "reason": "KNOWLEDGE_BASE_NOT_FOUND",
    "message": "Knowledge base does not exist or does not belong to this caller.",
}
NOT_AUTHORIZED = {
    "reason": "DRIVE_NOT_AUTHORIZED",
    "message": "The document owner has not authorized Google Drive, or the authorization has expired.",
}
NO_FOLDER = {"reason": "NO_LINKED_FOLDER", "message": "This knowledge base has no linked folder of this source."}
IN_PROGRESS = "SYNC_IN_PROGRESS"


@dataclass
class SyncAnswer:
    source: str
    accepted: bool = True
    knowledge_base_ids: set[str] = field(default_factory=set)
    folder_ids: list[str] = field(default_factory=list)
    doc_count: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    scheduled_round_running: bool = False
    reason: str | None = None

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "accepted": self.accepted,
            "source": self.source,
            "matched_knowledge_base_count": len(self.knowledge_base_ids),
            "matched_doc_count": self.doc_count,
            "matched_folder_count": len(self.folder_ids),
            "skipped": self.skipped,
            "scheduled_round_running": self.scheduled_round_running,
        }
        if self.reason:
            data["reason"] = self.reason
        return data


def request_sync(
    svc: Services, principal: Principal, source: str, knowledge_base_ids: list[str] | None,
    *, connectors: tuple[str, ...] | None = None,
) -> SyncAnswer:
    """Plan the round over the folders of ``connectors`` (``source``'s alone by default) and,
    unless the caller's previous round still runs, start it."""
    connectors = connectors or (source,)
    answer = SyncAnswer(source)
    with svc.db.session() as session:
        answer.scheduled_round_running = linked.running(session, principal.user_id, "scheduled") is not None
        if linked.running(session, principal.user_id, "manual") is not None:
            answer.accepted, answer.reason = False, IN_PROGRESS
            return answer
        for notebook, folders in _matched(session, principal, connectors, knowledge_base_ids, answer):
            _plan_notebook(svc, session, notebook, folders, answer)
    if answer.folder_ids:
        sync_folders(svc, principal, answer.folder_ids, trigger="manual", connector=source)
    return answer


def sync_folders(
    svc: Services, principal: Principal, folder_ids: list[str], *, trigger: str, connector: str = "",
) -> str:
    """Start a round over these folders now (a "sync now", a new link, a retry); returns its id.
    Only ``manual`` rounds count for SYNC_IN_PROGRESS."""
    with svc.db.session() as session:
        run = linked.start_run(
            session, owner_id=principal.user_id, vault_hash=principal.scope.vault_hash,
            workspace_id=principal.scope.workspace_id, trigger=trigger, connector=connector or "linked",
            folder_ids=folder_ids, lease=timedelta(seconds=svc.settings.job_lease_seconds),
        )
        run_id = run.id
    try:
        dispatch_round(run_id)
    except (KombuError, OSError):  # said at once, rather than "running" until its lease passes
        with svc.db.session() as session:
            linked.finish_run(session, run_id, "failed", {}, "The broker could not be reached.")
        raise ApiError(
            503, "BROKER_UNAVAILABLE", "The sync could not be handed to the workers (the broker did not answer); try again.",
        ) from None
    return run_id


def _matched(
    session: Session, principal: Principal, connectors: tuple[str, ...], knowledge_base_ids: list[str] | None,
    answer: SyncAnswer,
) -> list[tuple[Notebook, list[LinkedFolder]]]:
    """The caller's notebooks the call names (all that link folders of ``connectors`` when it
    names none), each with its folders of those; the others are listed as skipped."""
    if knowledge_base_ids is None:
        candidates = _owned_with_folders(session, principal, connectors)
    else:
        candidates = []
        for notebook_id in dict.fromkeys(knowledge_base_ids):
            notebook = notebooks.find_visible(session, principal, notebook_id)
            if notebook is None or not notebooks.is_owner(session, principal, notebook):
                answer.skipped.append({**NOT_FOUND, "knowledge_base_id": notebook_id})
            else:
                candidates.append(notebook)
    by_notebook: dict[str, list[LinkedFolder]] = {}
    for folder in linked.folders(session, [n.id for n in candidates], connectors):
        by_notebook.setdefault(folder.notebook_id, []).append(folder)
    matched = []
    for notebook in candidates:
        if notebook.id in by_notebook:
            matched.append((notebook, by_notebook[notebook.id]))
        else:
            answer.skipped.append({**NO_FOLDER, "knowledge_base_id": notebook.id})
    return matched


def _owned_with_folders(session: Session, principal: Principal, connectors: tuple[str, ...]) -> list[Notebook]:
    folders = linked.folders_of_scope(session, principal.scope.vault_hash, principal.scope.workspace_id, connectors)
    owned = notebooks.owned_ids(session, principal, {f.notebook_id for f in folders})
    return [n for n in (session.get(Notebook, notebook_id) for notebook_id in sorted(owned)) if n is not None]


def _plan_notebook(
    svc: Services, session: Session, notebook: Notebook, folders: list[LinkedFolder], answer: SyncAnswer
) -> None:
    """Count the notebook's folders and documents in; a Drive folder whose owner (who linked it)
    has no valid authorisation is skipped, with its documents counted in the reason."""
    counts = linked.document_counts(session, [f.id for f in folders])
    refused = [
        f for f in folders if f.connector == GOOGLE_DRIVE and not drive_authorized(svc, session, f.linked_by)
    ]
    if refused:
        doc_count = sum(counts.get(f.id, 0) for f in refused)
        answer.skipped.append({**NOT_AUTHORIZED, "knowledge_base_id": notebook.id, "doc_count": doc_count})
    taken = [f for f in folders if f not in refused]
    if not taken:
        return
    answer.knowledge_base_ids.add(notebook.id)
    answer.folder_ids.extend(f.id for f in taken)
    answer.doc_count += sum(counts.get(f.id, 0) for f in taken)
