"""A chat turn reads only the end of its thread: the model gets the last messages in order, and a
long transcript is not loaded whole for every turn (each turn would grow slower as the thread grew;
bench/chat_latency.py asks hundreds of questions in one thread and saw it)."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.orm import Session

from app.services.chat_turn import HISTORY_MESSAGES
from pipeline.answering.llm import OpenAICompatibleEngine
from storage import accounts, conversations
from storage.models import Message, Notebook
from support_api import create_notebook, index, services_of

STORED = 3 * HISTORY_MESSAGES


def _fill_thread(world, notebook_id: str) -> None:  # type: ignore[no-untyped-def]
    with services_of(world).db.session() as session:
        principal = accounts.principal_for_token(session, services_of(world).settings.vault_hash, world.tokens["alice"])
        assert principal is not None
        thread = conversations.thread(session, session.get(Notebook, notebook_id), principal.user_id, create=True)
        for n in range(STORED):
            role = "user" if n % 2 == 0 else "assistant"
            conversations.append(session, thread, role=role, author_id=None, text=f"message {n}")


def test_a_turn_sends_the_last_messages_in_order_and_loads_no_others(
    world, fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    url, log = fake_server([{"text": "Nothing here answers that."}])
    services_of(world).__dict__["answer_engine"] = OpenAICompatibleEngine(url, "fake-model")
    notebook_id = create_notebook(world, ["dmca"])
    index(world, notebook_id)
    _fill_thread(world, notebook_id)
    loaded: list[int] = []

    def count(session: Session, instance: object) -> None:
        if isinstance(instance, Message):
            loaded.append(instance.id)

    event.listen(Session, "loaded_as_persistent", count)
    try:
        response = world.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": "And the last one?"})
        assert response.status_code == 200, response.get_data(as_text=True)
        response.get_data()  # the whole stream: the turn has run
    finally:
        event.remove(Session, "loaded_as_persistent", count)

    sent = json.loads(log.read_text().splitlines()[0])["messages"]
    history = [m["content"] for m in sent if m["role"] in ("user", "assistant") and m["content"] is not None]
    assert history == [f"message {n}" for n in range(STORED - HISTORY_MESSAGES, STORED)] + ["And the last one?"]
    assert len(loaded) <= HISTORY_MESSAGES
