"""Consumed embedded-broker messages are purged; waiting ones stay."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from storage.broker_cleanup import purge_consumed


def test_only_consumed_messages_are_deleted(tmp_path: Path) -> None:
    broker = tmp_path / "broker.sqlite3"
    with sqlite3.connect(broker) as conn:
        conn.execute("CREATE TABLE kombu_message (id INTEGER PRIMARY KEY, visible BOOLEAN, payload TEXT)")
        conn.executemany("INSERT INTO kombu_message (visible, payload) VALUES (?, 'x')", [(0,), (0,), (1,)])
    assert purge_consumed(broker) == 2
    with sqlite3.connect(broker) as conn:
        assert conn.execute("SELECT visible FROM kombu_message").fetchall() == [(1,)]
    assert purge_consumed(tmp_path / "missing.sqlite3") == 0
