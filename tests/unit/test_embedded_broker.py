"""The embedded broker: the poll of an empty queue does not take SQLite's write lock, and a busy
consumer notices a freed slot sooner than an idle one polls."""
from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection, Queue
from kombu.message import Message

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


def test_a_busy_consumer_looks_for_a_freed_slot_often_and_an_idle_one_polls_slowly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While every slot is taken nothing may be fetched, so the wait is short and reads nothing;
    an idle consumer polls the database at the polling interval. Sleeps are recorded, not timed."""
    pauses: list[float] = []
    monkeypatch.setattr(embedded_broker, "sleep", pauses.append)
    delivered: list[Message] = []
    with _connection(tmp_path / "broker.sqlite3") as connection:
        queue = Queue("extract", routing_key="extract")
        producer = connection.Producer()
        for n in range(2):
            producer.publish({"n": n}, routing_key="extract", declare=[queue])
        with connection.Consumer(queue, callbacks=[lambda body, message: delivered.append(message)],
                                 prefetch_count=1):
            connection.drain_events(timeout=1)
            assert [message.payload for message in delivered] == [{"n": 0}]
            with pytest.raises(socket.timeout):  # the one slot is taken: the second waits
                connection.drain_events(timeout=0.05)
            assert pauses and set(pauses) == {embedded_broker.FREED_SLOT_SECONDS}
            delivered[0].ack()
            connection.drain_events(timeout=1)
            assert [message.payload for message in delivered] == [{"n": 0}, {"n": 1}]
            delivered[1].ack()
            pauses.clear()
            with pytest.raises(socket.timeout):  # nothing waiting: the database is polled
                connection.drain_events(timeout=0.05)
            assert pauses and set(pauses) == {embedded_broker.POLLING_SECONDS}
