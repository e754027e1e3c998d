"""`gnosi serve`: the web app (gunicorn, threaded) plus, on the embedded broker, a worker.

On the embedded default one command runs everything on one machine: a Celery worker process
consumes both queues from a SQLite broker file, so no Redis is needed. With CELERY_BROKER_URL set,
serve runs only the web app and workers run elsewhere (`gnosi worker`).
"""
from __future__ import annotations

import os
import subprocess
import sys

from celery import Celery
from gunicorn.app.base import BaseApplication

from app.config import Settings
from tasks.celery_app import COORDINATOR, EXTRACT


class WebServer(BaseApplication):
    def __init__(self, settings: Settings, threads: int) -> None:
        self.settings = settings
        self.threads = threads
        super().__init__()

    def load_config(self) -> None:
        for name, value in {
            "bind": f"{self.settings.host}:{self.settings.port}",
            "workers": 1,
            "worker_class": "gthread",
            "threads": self.threads,
            "timeout": 120,
            "accesslog": "-",
            "control_socket_disable": True,
        }.items():
            self.cfg.set(name, value)

    def load(self):  # type: ignore[no-untyped-def]
        from app import create_app

        return create_app(self.settings)


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


def serve(settings: Settings, *, threads: int, worker_concurrency: int) -> None:
    from app import create_app

    celery_app = create_app(settings).extensions["celery"]
    worker = None
    settings.shared_secret()  # created before any worker reads it
    if settings.embedded:
        prepare_embedded_broker(celery_app)
        worker = subprocess.Popen(worker_command(f"{COORDINATOR},{EXTRACT}", worker_concurrency, beat=True))
    celery_app.send_task("sweep_jobs")  # jobs queued or running before a restart resume now
    try:
        WebServer(settings, threads).run()
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
