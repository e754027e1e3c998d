"""Connections that sit on a server without finishing anything: idle websockets and slowloris.

Shared by tests/integration/test_websocket_limits.py and bench/load.py, so the test that guards
the fix and the benchmark that measures it apply the same pressure. Both are raw sockets (no
thread per connection), so a few hundred of them cost the client almost nothing.
"""
from __future__ import annotations

import base64
import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def send_upgrade(host: str, port: int, timeout: float, headers: dict[str, str] | None = None) -> socket.socket:
    """Connect and send a websocket upgrade request for /api/chat/ws; the answer is left unread."""
    sock = socket.create_connection((host, port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    sock.sendall(
        f"GET /api/chat/ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n".encode()
    )
    return sock


def _read_upgrade(sock: socket.socket) -> None:
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed during the websocket handshake: {answer!r}")
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(f"websocket refused: {answer[:200]!r}")


@dataclass
class IdleSockets:
    """Websockets opened and left silent; ``failed`` counts handshakes that got no 101 in time."""

    sockets: list[socket.socket] = field(default_factory=list)
    failed: int = 0

    def closed_by_server(self) -> int:
        """Sockets on which the server sent something (a close frame) or hung up."""
        closed = 0
        for sock in self.sockets:
            sock.setblocking(False)
            try:
                sock.recv(1, socket.MSG_PEEK)
                closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        return closed


@contextmanager
def idle_websockets(host: str, port: int, count: int, timeout: float = 10.0) -> Iterator[IdleSockets]:
    """``count`` unauthenticated websockets that never send a message. Every upgrade request is
    sent before any answer is awaited, and all answers share one deadline: a server that cannot
    take them all makes the client wait ``timeout`` once, not once per socket."""
    idle, pending = IdleSockets(), []
    try:
        for _ in range(count):
            try:
                pending.append(send_upgrade(host, port, timeout))
            except OSError:
                idle.failed += 1
        deadline = time.monotonic() + timeout
        for sock in pending:
            try:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                _read_upgrade(sock)
                idle.sockets.append(sock)
            except (OSError, ConnectionError):
                sock.close()
                idle.failed += 1
        yield idle
    finally:
        for sock in idle.sockets:
            sock.close()


@dataclass
class Slowloris:
    """Half-sent HTTP requests kept alive by trickling one header line a second."""

    host: str
    port: int
    count: int
    dropped: int = 0  # connections the server closed; each is reopened, as an attacker would
    _stop: threading.Event = field(default_factory=threading.Event)

    def _open(self, selector: selectors.BaseSelector) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=5)
            sock.sendall(f"GET /api/session HTTP/1.1\r\nHost: {self.host}\r\n".encode())
        except OSError:
            self.dropped += 1
            return
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)

    def _close(self, selector: selectors.BaseSelector, sock: socket.socket) -> None:
        selector.unregister(sock)
        sock.close()
        self.dropped += 1

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Keep ``count`` requests half-sent until ``stop()``."""
        with selectors.DefaultSelector() as selector:
            for _ in range(self.count):
                self._open(selector)
            next_trickle = time.monotonic() + 1
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.2):
                    self._close(selector, key.fileobj)  # type: ignore[arg-type]  # the server answered or hung up
                    self._open(selector)
                if time.monotonic() >= next_trickle:
                    next_trickle += 1
                    for key in list(selector.get_map().values()):
                        try:
                            key.fileobj.send(b"X-Slow: 1\r\n")  # type: ignore[union-attr]
                        except OSError:
                            self._close(selector, key.fileobj)  # type: ignore[arg-type]
                            self._open(selector)
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]


@contextmanager
def slowloris(host: str, port: int, count: int) -> Iterator[Slowloris]:
    attack = Slowloris(host, port, count)
    thread = threading.Thread(target=attack.run, daemon=True)
    thread.start()
    try:
        yield attack
    finally:
        attack.stop()
        thread.join(timeout=10)
