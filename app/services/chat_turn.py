"""Run one authorised chat turn: persist the question, stream the engine, persist the answer.

Shared-mode turns of one notebook are serialised by a per-thread lock held for the whole turn, so
the transcript's order is the order in which turns ran and no answer interleaves with another
question, across every web process (app/services/turn_locks.py).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, nullcontext
from typing import Any

from app.extensions import Services
from app.services.chat_request import PinnedContext, TurnRequest
from app.services.chat_tools import TurnTools
from storage import conversations
from storage.models import ConversationThread, Notebook
from storage.scope import Principal

HISTORY_MESSAGES = 20


def run_turn(
    svc: Services,
    principal: Principal,
    turn: TurnRequest,
    contexts: list[PinnedContext],
    should_stop: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yields (event, data) pairs: token, tool, citation, approval (a knowledge-mode write the
    person must approve), and finally done."""
    page = contexts[0].notebook
    thread = _thread(svc, page, principal.user_id)
    lock = svc.turn_locks.hold(thread.id) if page.conversation_mode == "shared" else nullcontext()
    with lock:
        with svc.db.reader() as session:
            history = [
                {"role": m.role, "content": m.text}
                for m in conversations.recent_messages(session, thread, HISTORY_MESSAGES)
            ]
        with svc.db.session() as session:
            conversations.append(session, thread, role="user", author_id=principal.user_id, text=turn.message)
        tools = TurnTools(svc, principal, contexts, knowledge=turn.mode == "knowledge")
        final = None
        events = svc.answer_engine.answer(turn.message, tools.registry, history=history, should_stop=should_stop)
        with closing(events):  # type: ignore[arg-type]
            for event in events:
                if event.type == "done":
                    final = event.data
                elif event.type == "citation":
                    citation = tools.citation(event.data["chunk_id"], event.data["quote"])
                    if citation is not None:
                        yield "citation", citation
                else:
                    yield event.type, event.data
                    for approval in tools.new_approvals():  # asked for by the tool call just done
                        yield "approval", approval
        if final is None:  # stopped: the client went away, nothing more is sent or stored
            return
        citations = [
            cited for c in final["citations"] if (cited := tools.citation(c["chunk_id"], c["quote"])) is not None
        ]
        related = tools.related() if final["status"] == "no_evidence" else []
        pins = {context.notebook.id: context.revision.id for context in contexts}
        with svc.db.session() as session:
            message = conversations.append(
                session, thread, role="assistant", author_id=None, text=final["text"],
                status=final["status"], citations=citations, related=related, pins=pins,
            )
        yield "done", {
            "message_id": message.id, "text": final["text"], "status": final["status"], "citations": citations,
            "related": related, "dropped": final.get("dropped", 0), "approvals": tools.approvals,
        }


def _thread(svc: Services, page: Notebook, user_id: str) -> ConversationThread:
    """The caller's thread, looked up without the write lock and created under it on a first turn.

    Every turn used to take the write lock (``BEGIN IMMEDIATE``) to look its thread up. While
    another process holds that lock, SQLite's busy handler sleeps in C and stops every request of
    the waiting web process, so each write a turn takes needlessly lengthens the first-event tail:
    ten clients on two web processes, 300 turns per variant interleaved, first event p95 43 → 25 ms.
    """
    with svc.db.reader() as session:
        found = conversations.thread(session, page, user_id, create=False)
    if found is not None:
        return found
    with svc.db.session() as session:  # looked up again under the lock: a concurrent first turn may have made it
        created = conversations.thread(session, page, user_id, create=True)
    assert created is not None
    return created
