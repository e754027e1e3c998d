"""The embedded broker: kombu's SQLAlchemy transport on a SQLite file, polled cheaply.

kombu's channel takes SQLite's write lock (``BEGIN IMMEDIATE``) on every poll of every queue,
empty or not, so an idle worker serving three queues every 50 ms keeps taking the lock that each
publish needs. This channel first looks, without a transaction, whether the queue has a visible
message, and takes the lock only when it has; a message taken by another consumer in between is
an empty poll as before. Queue ids are remembered: a queue row is never deleted.
"""
from __future__ import annotations

import socket
from queue import Empty
from time import monotonic, sleep

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as kombu_sqlalchemy
from sqlalchemy import exists, select

from app.config import EMBEDDED_BROKER_SCHEME

# kombu polls every second by default; 50 ms keeps the embedded broker's round trip near 75 ms
# (measured in STACK.md).
POLLING_SECONDS = 0.05
# How often a worker whose every process is busy looks whether one has finished (no query).
FREED_SLOT_SECONDS = 0.005


class Channel(kombu_sqlalchemy.Channel):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._queue_ids: dict[str, int] = {}

    def _queue_id(self, queue: str) -> int:
        if queue not in self._queue_ids:
            self._queue_ids[queue] = self._get_or_create(queue).id
        return self._queue_ids[queue]

    def _get(self, queue: str) -> object:
        message = self.message_cls
        waiting = self.session.execute(
            select(
                exists().where(message.queue_id == self._queue_id(queue), message.visible.is_(True))
            )
        ).scalar()
        if not waiting:
            self.session.commit()
            raise Empty()
        return super()._get(queue)


class Transport(kombu_sqlalchemy.Transport):
    Channel = Channel
    polling_interval = POLLING_SECONDS

    def drain_events(self, connection: object, timeout: float | None = None) -> None:
        """kombu's loop, except that while every channel's consumer slots are taken (nothing may
        be fetched, so nothing is read from the database) it looks again every
        ``FREED_SLOT_SECONDS`` instead of ``polling_interval``. A slot frees when a task ends,
        which is when a source's next step waits to be taken: sleeping the full interval there
        cost each source up to 50 ms per step: 300 sources took 1.2× as long as with the three
        tasks before the five steps, and take 1.03× now (bench/ingest.py, embedded layout)."""
        started = monotonic()
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                if timeout is not None and monotonic() - started >= timeout:
                    raise socket.timeout() from None
                consuming = [channel for channel in self.channels if channel._consumers]
                full = bool(consuming) and not any(channel.qos.can_consume() for channel in consuming)
                pause = FREED_SLOT_SECONDS if full else self.polling_interval
                sleep(min(pause, timeout) if timeout else pause)


def register() -> None:
    """Make ``EMBEDDED_BROKER_SCHEME`` a kombu transport name, in every process that opens a connection."""
    TRANSPORT_ALIASES[EMBEDDED_BROKER_SCHEME] = f"{__name__}:Transport"
