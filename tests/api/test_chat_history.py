"""Reading a thread costs what changed, not its length: a chat turn reads only the end of its
thread (the model gets the last messages in order; bench/chat_latency.py asks hundreds of questions
in one thread, and each turn grew slower as it grew), and the transcript a shared notebook's page
asks for every 10 s is answered 304 without being read when nothing changed."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.orm import Session

from app.services.chat_turn import HISTORY_MESSAGES
from pipeline.answering.llm import OpenAICompatibleEngine
from storage import accounts, conversations
from storage.models import Message, Notebook
from support_api import create_notebook, index, services_of

STORED = 3 * HISTORY_MESSAGES


def _append(world, notebook_id: str, count: int) -> None:  # type: ignore[no-untyped-def]
    """``count`` more messages in alice's thread: "message 0", "message 1", … from its length on."""
    with services_of(world).db.session() as session:
        principal = accounts.principal_for_token(session, services_of(world).settings.vault_hash, world.tokens["alice"])
        assert principal is not None
        thread = conversations.thread(session, session.get(Notebook, notebook_id), principal.user_id, create=True)
        start = len(conversations.messages(session, thread))
        for n in range(start, start + count):
            role = "user" if n % 2 == 0 else "assistant"
            conversations.append(session, thread, role=role, author_id=None, text=f"message {n}")


@contextmanager
def _messages_loaded() -> Iterator[list[int]]:
    loaded: list[int] = []

    def count(session: Session, instance: object) -> None:
        if isinstance(instance, Message):
            loaded.append(instance.id)

    event.listen(Session, "loaded_as_persistent", count)
    try:
        yield loaded
    finally:
        event.remove(Session, "loaded_as_persistent", count)


def test_a_turn_sends_the_last_messages_in_order_and_loads_no_others(
    world, fake_server: Callable[[list[dict]], tuple[str, Path]]
) -> None:
    url, log = fake_server([{"text": "Nothing here answers that."}])
    services_of(world).__dict__["answer_engine"] = OpenAICompatibleEngine(url, "fake-model")
    notebook_id = create_notebook(world, ["dmca"])
    index(world, notebook_id)
    _append(world, notebook_id, STORED)

    with _messages_loaded() as loaded:
        response = world.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": "And the last one?"})
        assert response.status_code == 200, response.get_data(as_text=True)
        response.get_data()  # the whole stream: the turn has run

    sent = json.loads(log.read_text().splitlines()[0])["messages"]
    history = [m["content"] for m in sent if m["role"] in ("user", "assistant") and m["content"] is not None]
    assert history == [f"message {n}" for n in range(STORED - HISTORY_MESSAGES, STORED)] + ["And the last one?"]
    assert len(loaded) <= HISTORY_MESSAGES


def test_an_unchanged_transcript_is_answered_304_without_reading_it(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    path = f"/api/notebooks/{notebook_id}/conversation"
    _append(world, notebook_id, 4)

    def get(tag: str):  # type: ignore[no-untyped-def]
        return world.client.get(path, headers={**world.headers("alice"), "If-None-Match": tag})

    first = world.call("GET", path)
    assert first.status_code == 200 and first.headers["Cache-Control"] == "private, no-cache"
    tag = first.headers["ETag"]
    with _messages_loaded() as loaded:
        again = get(tag)
    assert again.status_code == 304 and again.headers["ETag"] == tag and loaded == []

    _append(world, notebook_id, 1)
    grown = get(tag)
    assert grown.status_code == 200 and grown.headers["ETag"] != tag
    assert [m["text"] for m in grown.json["messages"]] == [f"message {n}" for n in range(5)]

    assert world.call("DELETE", path).json == {"cleared": 5}
    cleared = get(grown.headers["ETag"])
    assert cleared.status_code == 200 and cleared.json["messages"] == []
    other = world.client.get(path, headers={**world.headers("bob"), "If-None-Match": tag})  # his own thread
    assert other.status_code == 200 and other.json["messages"] == []
