"""The embedded broker's poll of an empty queue does not take SQLite's write lock."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from app.config import EMBEDDED_BROKER_SCHEME
from tasks import embedded_broker

embedded_broker.register()


def _connection(path: Path) -> Connection:
    # A short busy timeout: kombu's own channel would wait for the lock, then fail with it.
    return Connection(
        f"{EMBEDDED_BROKER_SCHEME}+sqlite:///{path}", transport_options={"connect_args": {"timeout": 0.5}}
    )


def test_an_empty_poll_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    broker = tmp_path / "broker.sqlite3"
    with _connection(broker) as connection:
        queue = connection.SimpleQueue("extract")
        writer = sqlite3.connect(broker)
        writer.execute("BEGIN IMMEDIATE")  # a publisher holds the write lock
        try:
            with pytest.raises(Empty):
                queue.get(block=False)
        finally:
            writer.rollback()
            writer.close()
            queue.close()


def test_a_waiting_message_is_delivered_once(tmp_path: Path) -> None:
    with _connection(tmp_path / "broker.sqlite3") as connection:
        queue = connection.SimpleQueue("chunk")
        queue.put({"source": "s1"})
        message = queue.get(block=False)
        message.ack()
        assert message.payload == {"source": "s1"}
        with pytest.raises(Empty):
            queue.get(block=False)
        queue.close()
