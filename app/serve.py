"""`gnosi serve`: the web app (gunicorn, gevent) plus, on the embedded broker, a worker.

On the embedded default one command runs everything on one machine: a Celery worker process
consumes both queues from a SQLite broker file, so no Redis is needed. With CELERY_BROKER_URL set,
serve runs only the web app and workers run elsewhere (`gnosi worker`).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from celery import Celery

from app.config import Settings
from tasks.celery_app import COORDINATOR, EXTRACT


# gunicorn's gevent worker reads every request head (request line and headers) under its
# keep-alive timer, so this also bounds how long a half-sent request (slowloris) is kept.
REQUEST_HEAD_SECONDS = 5
# On shutdown, connections still open after this (idle websockets, turns) are closed.
GRACEFUL_SECONDS = 10


class WebServer:
    """gunicorn with one gevent worker, run as its own interpreter (``python -m gunicorn``).

    Every connection is a greenlet, so idle websockets and slow requests cannot take the threads
    HTTP needs (docs/decisions/0006). Why a child process: this one has already built the Flask
    and Celery apps to send the start-up sweep, so their locks, threads and SSL contexts exist
    here, and gevent must patch before those are made. The child's master imports only gunicorn
    and ``serving.worker``; its worker patches, then loads ``app:create_app()`` (no preload).
    One worker process, because the websocket caps are counted per process.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def command(self) -> list[str]:
        settings = self.settings
        return [
            sys.executable, "-m", "gunicorn", "app:create_app()",
            "--bind", f"{settings.host}:{settings.port}",
            "--workers", "1",
            "--worker-class", "serving.worker.JsonErrorGeventWorker",
            "--worker-connections", str(settings.web_connections),
            "--keep-alive", str(REQUEST_HEAD_SECONDS),
            "--graceful-timeout", str(GRACEFUL_SECONDS),
            "--timeout", "120",
            "--access-logfile", "-",
            "--no-control-socket",
        ]

    def run(self) -> None:
        """Serve until gunicorn exits; SIGTERM, SIGINT and SIGHUP sent to this process reach it."""
        process = subprocess.Popen(self.command())
        forwarded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, lambda signum, _frame: process.send_signal(signum)) for sig in forwarded}
        try:
            returncode = process.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if returncode:
            raise SystemExit(returncode)


def worker_command(queues: str, concurrency: int, loglevel: str = "WARNING", beat: bool = False) -> list[str]:
    """``beat`` embeds the scheduler that runs the job sweeper; exactly one worker should have it."""
    return [
        sys.executable, "-m", "celery", "-A", "tasks.worker", "worker",
        "-Q", queues, "-c", str(concurrency), "--loglevel", loglevel, "-E",
        "-n", f"gnosi-{os.getpid()}@%h", *(["-B"] if beat else []),
    ]


def prepare_embedded_broker(celery_app: Celery) -> None:
    """Create kombu's tables once, before any worker starts: two workers racing to create them fail."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel  # noqa: B018 - opening the channel creates the tables


def serve(settings: Settings, *, worker_concurrency: int) -> None:
    from app import create_app

    celery_app = create_app(settings).extensions["celery"]
    worker = None
    settings.shared_secret()  # created before any worker reads it
    if settings.embedded:
        prepare_embedded_broker(celery_app)
        worker = subprocess.Popen(worker_command(f"{COORDINATOR},{EXTRACT}", worker_concurrency, beat=True))
    celery_app.send_task("sweep_jobs")  # jobs queued or running before a restart resume now
    try:
        WebServer(settings).run()
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
