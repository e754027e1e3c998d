"""Validate and authorise one chat turn: the page notebook, attached notebooks, exact sources.

The server pins every notebook to its active, complete revision and derives the checkpoint
principal itself; fields a client may send to choose those are ignored, and context that is not a
notebook (attachments, mentions, skill overrides) is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.errors import ApiError
from app.http import refuse_unknown_fields
from storage import jobs, notebooks, revisions
from storage.models import Notebook, Revision
from storage.scope import Principal

MAX_MESSAGE_CHARS = 8000
# "It accepts up to sixteen authorized notebook contexts": the page's notebook and 15 others.
MAX_CONTEXTS = 16
MAX_SOURCE_IDS = 1000
REFUSED_CONTEXT = ("attachments", "mentions", "skill", "skills", "skill_overrides", "tools", "context")
IGNORED_CHOICES = (
    "revision", "revision_id", "revisions", "principal", "checkpoint_principal", "session", "session_id",
    "namespace", "thread_id",
)
ACCEPTED = ("notebook_id", "message", "notebook_ids", "source_ids", "mode", *IGNORED_CHOICES)
# "notebook": the read-only notebook tools. "knowledge": those and the knowledge tools, whose one
# write tool asks the person's approval (pipeline.answering.knowledge_tools).
MODES = ("notebook", "knowledge")
READY_STATES = ("available", "stale")


@dataclass(frozen=True)
class TurnRequest:
    notebook_id: str
    message: str
    notebook_ids: list[str]
    source_ids: list[str]
    mode: str = "notebook"


@dataclass(frozen=True)
class PinnedContext:
    """One notebook of the turn at its pinned revision; ``source_ids`` None means all available."""

    notebook: Notebook
    revision: Revision
    source_ids: frozenset[str] | None


def id_list(body: dict[str, Any], name: str, limit: int) -> list[str]:
    value = body.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be a list of ids.", field=name)
    if len(value) > limit:
        raise ApiError(400, "TOO_MANY_CONTEXTS" if name == "notebook_ids" else "TOO_MANY_SOURCES",
                       f"'{name}' holds at most {limit} ids.", field=name)
    return list(dict.fromkeys(value))


def parse_turn(body: dict[str, Any]) -> TurnRequest:
    refused = [key for key in REFUSED_CONTEXT if key in body]
    if refused:
        raise ApiError(
            400, "CONTEXT_NOT_ALLOWED",
            f"Notebook chat accepts only notebooks and their sources as context, not {', '.join(refused)}.",
        )
    refuse_unknown_fields(body, ACCEPTED)
    notebook_id, message = body.get("notebook_id"), body.get("message")
    if not isinstance(notebook_id, str) or not notebook_id:
        raise ApiError(400, "FIELD_REQUIRED", "'notebook_id' is required.", field="notebook_id")
    if not isinstance(message, str) or not message.strip():
        raise ApiError(400, "FIELD_REQUIRED", "'message' must be a non-empty string.", field="message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ApiError(400, "FIELD_TOO_LONG", f"'message' is at most {MAX_MESSAGE_CHARS} characters.", field="message")
    attached = [nid for nid in id_list(body, "notebook_ids", MAX_CONTEXTS) if nid != notebook_id]
    if 1 + len(attached) > MAX_CONTEXTS:
        raise ApiError(400, "TOO_MANY_CONTEXTS",
                       f"At most {MAX_CONTEXTS} notebooks per turn: this one and {MAX_CONTEXTS - 1} others.")
    mode = body.get("mode", "notebook")
    if mode not in MODES:
        raise ApiError(400, "FIELD_INVALID", f"'mode' must be one of: {', '.join(MODES)}.", field="mode")
    return TurnRequest(notebook_id, message.strip(), attached, id_list(body, "source_ids", MAX_SOURCE_IDS), mode)


def pinned_revision(session: Session, notebook: Notebook, *, page: bool) -> Revision:
    """The active revision, which must be complete and hold at least one usable source."""
    revision = revisions.get(session, notebook, notebook.active_revision_id) if notebook.active_revision_id else None
    usable = revision is not None and revision.state == "complete" and revision.number > 0 and any(
        s.state in READY_STATES for s in revisions.sources(session, revision.id)
    )
    if usable:
        return revision
    if not page:
        raise ApiError(409, "CONTEXT_NOT_READY", f"Notebook {notebook.id} has no indexed sources yet.")
    last = jobs.latest_job(session, notebook)
    reason = {
        "cancelled": "The last ingestion was cancelled; refresh the notebook to index its sources.",
        "failed": "The last ingestion failed; refresh the notebook to try again.",
    }.get(last.state if last else "", "The notebook's sources are still being indexed.")
    raise ApiError(409, "NOTEBOOK_NOT_READY", reason, job_state=last.state if last else None)


def authorize_turn(session: Session, principal: Principal, turn: TurnRequest) -> list[PinnedContext]:
    """The page notebook first, then attached ones; raises the precise 4xx otherwise."""
    page = notebooks.find_visible(session, principal, turn.notebook_id)
    if page is None:
        raise ApiError(404, "NOTEBOOK_NOT_FOUND", "No such notebook.")
    if not principal.can_write:
        raise ApiError(403, "READ_ONLY", "Viewers can read the transcript but not send a turn.")
    page_revision = pinned_revision(session, page, page=True)
    contexts = [PinnedContext(page, page_revision, selected_sources(session, page, page_revision, turn.source_ids))]
    for notebook_id in turn.notebook_ids:
        other = notebooks.find_visible(session, principal, notebook_id)
        if other is None:
            raise ApiError(404, "CONTEXT_NOT_FOUND", f"No such notebook: {notebook_id}.")
        contexts.append(PinnedContext(other, pinned_revision(session, other, page=False), None))
    return contexts


def selected_sources(
    session: Session, notebook: Notebook, revision: Revision, source_ids: list[str]
) -> frozenset[str] | None:
    if not source_ids:
        return None
    members = set(notebooks.member_ids(session, notebook))
    usable = {
        s.id for s in revisions.sources(session, revision.id) if s.state in READY_STATES and s.resource_id in members
    }
    bad = [sid for sid in source_ids if sid not in usable]
    if bad:
        raise ApiError(
            400, "SOURCE_NOT_ALLOWED",
            f"Not an available source of this notebook's current revision: {', '.join(bad[:5])}.",
        )
    return frozenset(source_ids)
