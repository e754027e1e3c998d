"""One-time approvals of the agent's writes (issue #20 item 6, the seed's rule).

The agent never writes on its own say: its write tool asks for an approval of one action with
its exact arguments, for the person it acts for, and the write happens only when that person
approves it, through the same path a person's own edit takes (``knowledge_edits``), with the
agent as its author. An approval is used once: taking it is a compare-and-set committed before
the write runs, so two approvals of one request at once write once, and an approved write that
is refused (a stale ``expected_version_id``) has used it up; the agent reads again and asks anew.
"""
from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.errors import ApiError
from app.timestamps import iso
from pipeline.knowledge.edit import MAX_BLOCK_CHARS, block_text_problem
from storage.models import KnowledgeApproval, KnowledgeNote, KnowledgeNoteVersion, Notebook, in_notebook, utcnow
from storage.scope import Principal

EDIT_BLOCK = "edit_block"
ACTIONS = (EDIT_BLOCK,)
LIFETIME = timedelta(minutes=15)
MAX_PENDING = 100
_EDIT_PARAMS = {"note_id": 32, "expected_version_id": 32, "block_key": 40, "text": MAX_BLOCK_CHARS}


def checked_params(action: str, params: Any) -> dict[str, str]:
    """``params`` as ``action`` takes them: exactly its fields, each a non-empty string in bounds."""
    if action not in ACTIONS:
        raise ApiError(400, "FIELD_INVALID", f"'action' must be one of: {', '.join(ACTIONS)}.", field="action")
    if not isinstance(params, dict) or set(params) != set(_EDIT_PARAMS):
        raise ApiError(400, "FIELD_INVALID", f"'params' must have exactly: {', '.join(_EDIT_PARAMS)}.", field="params")
    for name, longest in _EDIT_PARAMS.items():
        value = params[name]
        if name == "text":
            if problem := block_text_problem(value):
                raise ApiError(400, "FIELD_INVALID", f"'params.text' {problem}.", field="params.text")
        elif not isinstance(value, str) or not value.strip() or len(value) > longest:
            raise ApiError(400, "FIELD_INVALID", f"'params.{name}' must be a string of 1 to {longest} characters.",
                           field=f"params.{name}")
    return dict(params)


def request(session: Session, notebook: Notebook, principal: Principal, action: str, params: Any) -> KnowledgeApproval:
    """A pending approval of ``action`` with ``params``, for ``principal`` to approve."""
    approval = KnowledgeApproval(
        id=secrets.token_hex(24), vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
        user_id=principal.user_id, action=action, params=checked_params(action, params), expires_at=utcnow() + LIFETIME,
    )
    session.add(approval)
    session.flush()
    return approval


def get(session: Session, notebook: Notebook, principal: Principal, approval_id: str) -> KnowledgeApproval:
    """The principal's own approval (anyone else's does not exist for them)."""
    approval = session.scalar(select(KnowledgeApproval).where(
        in_notebook(KnowledgeApproval, notebook), KnowledgeApproval.id == approval_id,
        KnowledgeApproval.user_id == principal.user_id,
    ))
    if approval is None:
        raise ApiError(404, "APPROVAL_NOT_FOUND", "No such approval of yours in this notebook.")
    return approval


def pending(session: Session, notebook: Notebook, principal: Principal) -> list[KnowledgeApproval]:
    """The principal's approvals neither used nor expired (at most one lifetime's worth), newest first."""
    return list(session.scalars(select(KnowledgeApproval).where(
        in_notebook(KnowledgeApproval, notebook), KnowledgeApproval.user_id == principal.user_id,
        KnowledgeApproval.used_at.is_(None), KnowledgeApproval.expires_at > utcnow(),
    ).order_by(KnowledgeApproval.created_at.desc(), KnowledgeApproval.id).limit(MAX_PENDING)))


def take(session: Session, approval: KnowledgeApproval) -> None:
    """Use the approval now, or say why it cannot be (used already, expired)."""
    if approval.used_at is not None:
        raise ApiError(409, "APPROVAL_USED", "This approval was used already: ask for a new one.")
    if approval.expires_at <= utcnow():
        raise ApiError(410, "APPROVAL_EXPIRED", "This approval expired: ask for a new one.")
    taken = session.execute(update(KnowledgeApproval).where(
        KnowledgeApproval.id == approval.id, KnowledgeApproval.used_at.is_(None)
    ).values(used_at=utcnow()))
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        raise ApiError(409, "APPROVAL_USED", "This approval was used already: ask for a new one.")


def decline(session: Session, approval: KnowledgeApproval) -> None:
    """The person says no: the request is gone, and approving it later finds nothing."""
    if approval.used_at is not None:
        raise ApiError(409, "APPROVAL_USED", "This approval was used already.")
    session.delete(approval)


def shown(session: Session, notebook: Notebook, approvals: list[KnowledgeApproval]) -> list[dict[str, Any]]:
    """Each approval as its person is asked it: the note's title and the block's text at the
    version the edit names (null where that version is not a note of this notebook), and where to
    approve it. One query for them all."""
    named = {a.params["expected_version_id"] for a in approvals if a.action == EDIT_BLOCK}
    versions = {v.id: v for v in session.scalars(select(KnowledgeNoteVersion).join(
        KnowledgeNote, KnowledgeNote.id == KnowledgeNoteVersion.note_id,
    ).where(in_notebook(KnowledgeNote, notebook), KnowledgeNoteVersion.id.in_(named)))} if named else {}
    shown = []
    for approval in approvals:
        version = versions.get(approval.params.get("expected_version_id"))
        if version is not None and version.note_id != approval.params["note_id"]:
            version = None
        before = next((b["text"] for b in version.blocks if b["key"] == approval.params["block_key"]), None) if version else None
        shown.append({
            **approval_json(approval), "note_title": version.title if version else None, "before": before,
            "approve_url": f"/api/notebooks/{notebook.id}/knowledge/approvals/{approval.id}/approve",
        })
    return shown


def approval_json(approval: KnowledgeApproval) -> dict[str, Any]:
    return {"id": approval.id, "action": approval.action, "params": approval.params, "created_at": iso(approval.created_at),
            "expires_at": iso(approval.expires_at), "used_at": iso(approval.used_at)}
