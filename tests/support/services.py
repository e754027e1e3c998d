"""Start and stop the real services integration tests need (Redis, Celery workers, gnosi serve).

Everything binds to 127.0.0.1 on a free port and is stopped by its PID. When a service is
missing the test is skipped, unless GNOSI_REQUIRE_ALL=1 (set by .ci/run): then it fails, so CI
can never go green by skipping.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
# The shared corpus beside the repository (DEVELOPERS.md), or where GNOSI_CORPUS_DIR says.
CORPUS = Path(os.environ.get("GNOSI_CORPUS_DIR") or REPO.parent / "shared" / "corpus")
FAKE_OPENAI_SERVER = REPO / "tests" / "support" / "fake_openai_server.py"


def require(condition: bool, reason: str) -> None:
    if condition:
        return
    import pytest  # here, so that the benches that use this module run without the test extras

    if os.environ.get("GNOSI_REQUIRE_ALL") == "1":
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)  # only when GNOSI_REQUIRE_ALL is not set (see above)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0, *, process: subprocess.Popen | None = None) -> None:
    """Until something listens on ``port``. Pass the ``process`` meant to listen there: should it
    exit (the port taken meanwhile, by another test process among those running side by side),
    whatever answers there is not it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited ({process.returncode}) before listening on port {port}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def stop(process: subprocess.Popen, timeout: float = 20.0) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RedisProcess:
    """A throwaway, in-memory redis-server on a free port (never the machine's shared one)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, process=self.process)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def restart(self) -> None:
        """Without persistence a restart loses every queued message: what a crash does."""
        self.stop()
        self.start()


@contextmanager
def redis_server(workdir: Path) -> Iterator[RedisProcess]:
    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    server = RedisProcess(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def service_env(local_data: Path, vault: Path, table_id: str, broker_url: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GNOSI_", "CELERY_"))}
    env.update(
        LOCAL_DATA=str(local_data),
        GNOSI_VAULT_PATH=str(vault),
        GNOSI_REFERENCES_TABLE=table_id,
        CELERY_BROKER_URL=broker_url,
        GNOSI_URL_ALLOWLIST="127.0.0.1",
        GNOSI_CHAT_TURNS_PER_MINUTE="1000",
        GNOSI_REFRESHES_PER_MINUTE="1000",
        # Tests edit vault files and open at once; the window has its own test (test_change_window).
        GNOSI_CHANGE_CHECK_SECONDS="0",
        OMP_NUM_THREADS="1",
        OMP_WAIT_POLICY="PASSIVE",
        PYTHONUNBUFFERED="1",
    )
    return env


@contextmanager
def serve_in_thread(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """Run an HTTP handler on 127.0.0.1 (free port) from a daemon thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class AnsweringHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers GET and HEAD alike through ``_answer`` (HEAD without the body)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._answer(with_body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(with_body=True)

    def _answer(self, with_body: bool) -> None:
        raise NotImplementedError


@contextmanager
def static_http_server(directory: Path) -> Iterator[str]:
    """Serve a folder; yields the base URL."""

    class QuietHandler(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    with serve_in_thread(functools.partial(QuietHandler, directory=str(directory))) as url:
        yield url


@contextmanager
def fake_openai_server(workdir: Path, turns: list[dict]) -> Iterator[tuple[str, Path]]:
    """The scripted OpenAI-compatible server (a real process) playing ``turns``; yields its base
    URL (ending in /v1) and the log of the request bodies it received."""
    script, log, port = workdir / "script.json", workdir / "requests.jsonl", free_port()
    script.write_text(json.dumps({"turns": turns}))
    command = [sys.executable, str(FAKE_OPENAI_SERVER), "--port", str(port), "--script", str(script), "--log", str(log)]
    process = subprocess.Popen(command)
    try:
        wait_for_port(port, timeout=10, process=process)
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        stop(process, timeout=5)
