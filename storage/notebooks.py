"""Notebooks, their ACL and their current resource membership.

Visibility rules live here, in the queries: a notebook another user cannot see is simply not
found, so its existence never leaks (404, not 403).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, or_, select
from sqlalchemy.orm import Session

from storage.models import (
    ConversationThread, Message, Notebook, NotebookAcl, NotebookResource, Revision, Source, in_notebook,
    utcnow,
)
from storage.retention import Released
from storage.scope import Principal

VISIBILITIES = ("private", "workspace")
CONVERSATION_MODES = ("private", "shared")


@dataclass(frozen=True)
class NotebookPage:
    items: list[Notebook]
    total: int


def _visible(principal: Principal) -> Select[tuple[Notebook]]:
    """A workspace notebook is seen by the whole workspace; a private one only by the users its
    ACL names. The ACL is the one source of truth: ``creator_id`` records who created it, and
    grants nothing by itself."""
    scope = principal.scope
    listed = select(NotebookAcl.notebook_id).where(
        NotebookAcl.user_id == principal.user_id,
        NotebookAcl.vault_hash == scope.vault_hash,
        NotebookAcl.workspace_id == scope.workspace_id,
    )
    return select(Notebook).where(
        Notebook.vault_hash == scope.vault_hash,
        Notebook.workspace_id == scope.workspace_id,
        or_(Notebook.visibility == "workspace", Notebook.id.in_(listed)),
    )


def owned_ids(session: Session, principal: Principal, notebook_ids: Iterable[str]) -> set[str]:
    """Those of ``notebook_ids`` whose ACL makes the caller an owner: owners manage sources and
    settings, and clear a shared history."""
    scope = principal.scope
    return set(session.scalars(
        select(NotebookAcl.notebook_id).where(
            NotebookAcl.notebook_id.in_(list(notebook_ids)),
            NotebookAcl.user_id == principal.user_id,
            NotebookAcl.role == "owner",
            NotebookAcl.vault_hash == scope.vault_hash,
            NotebookAcl.workspace_id == scope.workspace_id,
        )
    ))


def is_owner(session: Session, principal: Principal, notebook: Notebook) -> bool:
    return notebook.id in owned_ids(session, principal, [notebook.id])


def create(
    session: Session,
    principal: Principal,
    *,
    title: str,
    visibility: str,
    conversation_mode: str,
    table_id: str,
    resource_ids: Iterable[str],
) -> Notebook:
    scope = principal.scope
    notebook = Notebook(
        vault_hash=scope.vault_hash,
        workspace_id=scope.workspace_id,
        title=title,
        visibility=visibility,
        conversation_mode=conversation_mode,
        creator_id=principal.user_id,
        table_id=table_id,
    )
    session.add(notebook)
    session.flush()
    session.add(
        NotebookAcl(
            vault_hash=scope.vault_hash,
            workspace_id=scope.workspace_id,
            notebook_id=notebook.id,
            user_id=principal.user_id,
            role="owner",
        )
    )
    add_resources(session, principal, notebook, resource_ids)
    return notebook


def find_visible(session: Session, principal: Principal, notebook_id: str) -> Notebook | None:
    return session.scalar(_visible(principal).where(Notebook.id == notebook_id))


def list_visible(
    session: Session, principal: Principal, *, q: str | None, page: int, per_page: int
) -> NotebookPage:
    query = _visible(principal)
    if q:
        query = query.where(Notebook.title.ilike(f"%{q}%"))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    items = session.scalars(
        query.order_by(Notebook.updated_at.desc(), Notebook.id)
        .offset((page - 1) * per_page)
        .limit(per_page)
    ).all()
    return NotebookPage(items=list(items), total=total)


def update_settings(notebook: Notebook, changes: dict[str, str]) -> None:
    for name, value in changes.items():
        setattr(notebook, name, value)
    notebook.updated_at = utcnow()


def delete_notebook(session: Session, notebook: Notebook) -> Released:
    """Delete derived data only; the vault's records and files are never touched. The checkpoint
    threads of every principal the notebook registered (each member's in private mode, the
    notebook's in shared mode) go first, with their messages; revisions, sources and chunks follow
    by cascade. Returns the attachment copies and cached extractions its sources held, for the
    caller to release once this commits (those another notebook uses stay)."""
    held = session.execute(
        select(Source.content_hash, Source.extraction_key)
        .join(Revision, Revision.id == Source.revision_id)
        .where(Revision.notebook_id == notebook.id)
    ).all()
    threads = select(ConversationThread.id).where(ConversationThread.notebook_id == notebook.id).scalar_subquery()
    session.execute(delete(Message).where(Message.thread_id.in_(threads)))
    session.execute(delete(ConversationThread).where(ConversationThread.notebook_id == notebook.id))
    notebook.active_revision_id = None
    session.flush()
    session.delete(notebook)
    return Released(
        frozenset(row.content_hash for row in held if row.content_hash),
        frozenset(row.extraction_key for row in held if row.extraction_key),
    )


def table_ids(session: Session, notebook_ids: set[str]) -> dict[str, str]:
    """The table each of these notebooks was created from (those that still exist)."""
    if not notebook_ids:
        return {}
    rows = session.execute(select(Notebook.id, Notebook.table_id).where(Notebook.id.in_(notebook_ids)))
    return {notebook_id: table_id for notebook_id, table_id in rows}


def member_ids(session: Session, notebook: Notebook) -> list[str]:
    """The members' resource ids, read as strings: every search asks, and building a thousand ORM
    objects for them took 7 ms at the median and, with the collections they set off, 108 ms at p95
    (bench/retrieval.py's 100k notebook, 1,000 resources)."""
    return list(session.scalars(_members_query(notebook, NotebookResource.resource_id)).all())


def failing_count(session: Session, notebook: Notebook, revision: Revision) -> int:
    """Members that ``revision`` covered and for which it holds no usable source (every source in
    error, or none left): what the sources panel shows as ``error``, counted for the status line."""
    if revision.completed_at is None:
        return 0
    usable = (
        select(Source.id)
        .where(Source.revision_id == revision.id, Source.resource_id == NotebookResource.resource_id, Source.state != "error")
        .exists()
    )
    failing = _members_query(notebook, NotebookResource.resource_id).where(
        NotebookResource.added_at <= revision.completed_at, ~usable
    )
    return session.scalar(select(func.count()).select_from(failing.subquery())) or 0


def backed_off(session: Session, notebook: Notebook, now: datetime) -> set[str]:
    """Members that keep failing and are not due for another try yet."""
    return set(
        session.scalars(
            select(NotebookResource.resource_id).where(
                NotebookResource.notebook_id == notebook.id, NotebookResource.retry_at > now
            )
        )
    )


def members(session: Session, notebook: Notebook) -> list[NotebookResource]:
    return list(session.scalars(_members_query(notebook, NotebookResource)).all())


def _members_query(notebook: Notebook, what: Any) -> Select[Any]:
    """``what`` (the rows, or some of their columns) of the notebook's members, by resource id."""
    return (
        select(what)
        .where(
            in_notebook(NotebookResource, notebook),
        )
        .order_by(NotebookResource.resource_id)
    )


def add_resources(
    session: Session, principal: Principal, notebook: Notebook, resource_ids: Iterable[str]
) -> list[str]:
    """Add the ids that are not members yet; returns the ids actually added."""
    existing = set(member_ids(session, notebook))
    added = [rid for rid in dict.fromkeys(resource_ids) if rid not in existing]
    session.add_all(
        NotebookResource(
            vault_hash=notebook.vault_hash,
            workspace_id=notebook.workspace_id,
            notebook_id=notebook.id,
            resource_id=rid,
            added_by=principal.user_id,
        )
        for rid in added
    )
    notebook.updated_at = utcnow()
    return added


def remove_resource(session: Session, notebook: Notebook, resource_id: str) -> bool:
    result = session.execute(
        delete(NotebookResource).where(
            in_notebook(NotebookResource, notebook),
            NotebookResource.resource_id == resource_id,
        )
    )
    notebook.updated_at = utcnow()
    return bool(result.rowcount)
