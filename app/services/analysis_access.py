"""Who may start, see and manage a notebook's analyses: one rule for the API and the chat's tools.

Starting one is a conversation-level action (editors and admins, not viewers), pinned to the
active revision with the chosen sources validated as a chat turn's are. Whoever may read the
notebook reads its analyses, as a shared transcript; in private conversation mode each member
sees their own (and owners all). Who started one, or an owner, may cancel or delete it, if they
may still write.
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from app.errors import ApiError
from app.extensions import Services
from app.services.chat_request import pinned_revision, selected_sources
from pipeline.analysis.types import Focus
from storage import analyses, notebooks
from storage.models import Analysis, Notebook
from storage.scope import Principal

# Analyses of one notebook running at once: each holds worker time for minutes.
MAX_ACTIVE = 3


def begin(svc: Services, session: Session, principal: Principal, notebook: Notebook, focus: Focus, source_ids: list[str]) -> Analysis:
    """A queued analysis the caller may start; the caller sends it once this transaction commits
    (``tasks.analysis.start_analysis``)."""
    if not principal.can_write:
        raise ApiError(403, "READ_ONLY", "Viewers can read analyses but not start one.")
    revision = pinned_revision(session, notebook, page=True)
    selected_sources(session, notebook, revision, source_ids)
    if analyses.active_count(session, notebook) >= MAX_ACTIVE:
        raise ApiError(409, "TOO_MANY_ANALYSES", f"At most {MAX_ACTIVE} analyses of a notebook run at once.")
    return analyses.start(session, notebook, requested_by=principal.user_id, focus=focus, source_ids=source_ids,
                          engine=svc.analysis_engine_name)


def only_own(session: Session, principal: Principal, notebook: Notebook) -> str | None:
    """The user whose analyses alone the caller sees (private conversation mode, not an owner)."""
    if notebook.conversation_mode == "private" and not notebooks.is_owner(session, principal, notebook):
        return principal.user_id
    return None


def visible(session: Session, principal: Principal, notebook: Notebook, analysis_id: str) -> Analysis:
    """The analysis if the caller may see it; otherwise 404, as an unknown one."""
    analysis = analyses.get(session, notebook, analysis_id)
    mine = only_own(session, principal, notebook)
    if analysis is None or (mine is not None and analysis.requested_by != mine):
        raise ApiError(404, "ANALYSIS_NOT_FOUND", "No such analysis in this notebook.")
    return analysis


def managed(session: Session, principal: Principal, notebook: Notebook, analysis_id: str) -> Analysis:
    """The analysis if the caller may still write and started it or owns the notebook."""
    analysis = visible(session, principal, notebook, analysis_id)
    if not principal.can_write:
        raise ApiError(403, "READ_ONLY", "Viewers can read analyses but not cancel or delete one.")
    if not may_manage(principal, analysis, owner=notebooks.is_owner(session, principal, notebook)):
        raise ApiError(403, "NOT_ANALYSIS_OWNER", "Only who started the analysis or the notebook's creator can do this.")
    return analysis


def may_manage(principal: Principal, analysis: Analysis, *, owner: bool) -> bool:
    """Whether the caller may cancel or delete ``analysis`` (``owner``: of its notebook), so a
    client shows only the actions the server would accept."""
    return principal.can_write and (owner or analysis.requested_by == principal.user_id)
