"""POST /api/chat (server-sent events) and the notebook's conversation and chat-source views."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Response, jsonify, request, stream_with_context

from app.api.access import visible_notebook
from app.timestamps import iso
from app.auth import current_principal
from app.cooperative import let_waiting_requests_run
from app.errors import ApiError
from app.extensions import Services, services
from app.http import json_object
from app.metrics import CHAT_DONE, CHAT_FIRST_EVENT
from app.services.chat_request import MAX_CONTEXTS, READY_STATES, authorize_turn, parse_turn
from app.services.chat_turn import run_turn
from app.services.ingest import request_ingest
from app.services.stored_citations import readable_citations
from app.services.titles import display_title, record_titles
from pipeline.types import PipelineError
from storage import conversations, notebooks, revisions
from storage.models import User
from storage.scope import Principal

log = logging.getLogger(__name__)
bp = Blueprint("chat", __name__)
# A turn ends with one of these (app.services.chat_turn, and _guarded for an engine failure).
LAST_EVENTS = ("done", "error")


def start_turn(
    svc: Services, principal: Principal, body: dict[str, Any], should_stop: Callable[[], bool]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Validate and authorise (raising ApiError before anything streams), then the event stream.

    Shared by SSE and the websocket, so both transports run the same code path.
    """
    started = time.perf_counter()
    turn = parse_turn(body)
    with svc.db.reader() as session:
        contexts = authorize_turn(session, principal, turn)
    svc.limiter.hit("chat", principal.user_id)
    events = _guarded(run_turn(svc, principal, turn, contexts, should_stop))
    return _timed(_checking_afterwards(events, svc, turn.notebook_id, principal.user_id), started)


def _checking_afterwards(
    events: Iterator[tuple[str, dict[str, Any]]], svc: Services, notebook_id: str, user_id: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Asking compares the sources with the active revision (a change queues a job; this turn
    answers from the revisions pinned above either way). Done once the turn's events are out, also
    when the client left early, so that the check (a stat of every attachment, when its window
    has passed) never delays the answer."""
    try:
        yield from events
    finally:
        try:
            request_ingest(svc, notebook_id, requested_by=user_id, only_if_changed=True)
        except Exception:  # the answer is out; a failed check is logged, the next ask checks again
            log.exception("the change check after a chat turn failed")


def _timed(events: Iterator[tuple[str, dict[str, Any]]], started: float) -> Iterator[tuple[str, dict[str, Any]]]:
    """The turn's events, measuring when the first and the last leave (app.metrics). The last is
    measured before it is sent: once the client has it, the metric must already count it."""
    first = True
    for event in events:
        if first:
            CHAT_FIRST_EVENT.observe(time.perf_counter() - started)
            first = False
        if event[0] in LAST_EVENTS:
            CHAT_DONE.observe(time.perf_counter() - started)
        yield event
        let_waiting_requests_run()


def _guarded(events: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """An engine failure mid-stream (LLM endpoint down) ends the stream with an error event."""
    try:
        yield from events
    except PipelineError as err:
        yield "error", {"code": err.code, "message": err.message}


@bp.post("/api/chat")
def chat_sse():  # type: ignore[no-untyped-def]
    principal = current_principal()
    events = start_turn(services(), principal, json_object(), should_stop=lambda: False)

    def stream() -> Iterator[str]:
        for event, data in events:
            yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    return Response(
        stream_with_context(stream()),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@bp.get("/api/notebooks/<notebook_id>/conversation")
def conversation(notebook_id: str):  # type: ignore[no-untyped-def]
    """The canonical transcript of the notebook's current mode, as the caller may see it.

    It carries an ETag made of what it shows without the messages themselves (their number, the
    last id, their authors' names, the caller's rights): an open page of a shared notebook asks
    again every 10 s, and its browser's conditional request is answered 304 without reading a
    transcript that has not changed. (A citation stored before titles were kept takes its
    record's title when read: a retitled record shows in such a transcript at its next message.)
    """
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        thread = conversations.thread(session, notebook, principal.user_id, create=False)
        count, last, author_ids = conversations.version(session, thread) if thread else (0, 0, ())
        authors = {u.id: u.name for u in session.query(User).filter(User.id.in_(author_ids))}
        head = {
            "notebook_id": notebook.id,
            "mode": notebook.conversation_mode,
            "read_only": not principal.can_write,
            "can_clear": notebook.conversation_mode == "private" or notebooks.is_owner(session, principal, notebook),
        }
        tag = _transcript_tag(head, thread.id if thread else None, count, last, authors)
        if request.if_none_match.contains_weak(tag):
            return _revalidated(Response(status=304), tag)
        messages = conversations.messages(session, thread) if thread else []
        labelled = readable_citations(services(), session, [m.citations for m in messages])
        body = {
            **head,
            "messages": [
                {
                    "id": m.id,
                    "role": m.role,
                    "author": {"id": m.author_id, "name": authors.get(m.author_id)} if m.author_id else None,
                    "text": m.text,
                    "status": m.status,
                    "citations": citations,
                    "related": m.related,
                    "created_at": iso(m.created_at),
                }
                for m, citations in zip(messages, labelled)
            ],
        }
    return _revalidated(jsonify(body), tag)


def _transcript_tag(head: dict[str, Any], thread_id: str | None, count: int, last: int, authors: dict[str, str]) -> str:
    shown = json.dumps([head, thread_id, count, last, sorted(authors.items())], sort_keys=True)
    return hashlib.sha256(shown.encode()).hexdigest()[:32]


def _revalidated(response: Response, tag: str) -> Response:
    """A private answer the browser keeps but asks about again every time (``no-cache``)."""
    response.set_etag(tag, weak=True)
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.delete("/api/notebooks/<notebook_id>/conversation")
def clear_conversation(notebook_id: str):  # type: ignore[no-untyped-def]
    """Private mode: a member clears their own thread. Shared mode: only the creator clears it."""
    principal = current_principal()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        if notebook.conversation_mode == "shared" and not notebooks.is_owner(session, principal, notebook):
            raise ApiError(403, "NOT_NOTEBOOK_OWNER", "Only the notebook's creator can clear the shared history.")
        thread = conversations.thread(session, notebook, principal.user_id, create=False)
        cleared = conversations.clear(session, thread) if thread else 0
    return {"cleared": cleared}


@bp.get("/api/notebooks/<notebook_id>/chat-sources")
def chat_sources(notebook_id: str):  # type: ignore[no-untyped-def]
    """What the caller may attach to a turn: this notebook's available sources, other notebooks."""
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        members = set(notebooks.member_ids(session, notebook))
        titles = record_titles(services(), notebook.table_id)
        sources = [
            {
                "id": s.id, "resource_id": s.resource_id, "kind": s.kind, "title": s.title, "state": s.state,
                "label": display_title(titles.get(s.resource_id), s.title, s.value, s.resource_id),
            }
            for s in (revisions.sources(session, notebook.active_revision_id) if notebook.active_revision_id else [])
            if s.state in READY_STATES and s.resource_id in members
        ]
        others = notebooks.list_visible(session, principal, q=None, page=1, per_page=200).items
        attachable = [
            {"id": nb.id, "title": nb.title}
            for nb in others
            if nb.id != notebook.id and nb.active_revision_id is not None
        ]
    return {"sources": sources, "notebooks": attachable, "max_notebooks": MAX_CONTEXTS - 1}
