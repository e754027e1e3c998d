"""`gnosi serve`: the web app (gunicorn, gevent) plus, on the embedded broker, a worker.

On the embedded default one command runs everything on one machine: a Celery worker process
consumes every queue from a SQLite broker file, so no Redis is needed. With CELERY_BROKER_URL set,
serve runs only the web app and workers run elsewhere (`gnosi worker`).

The embedded worker lives exactly as long as serve: it dies with serve however serve dies
(pipeline/parent_death.py), and it holds this LOCAL_DATA's beat lock for its life (app/instance_lock.py),
so a second serve is refused instead of adding a second worker and beat. Holding that lock also
tells a start that the previous embedded worker is dead, so its jobs resume at once.
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from datetime import datetime

from celery import Celery

from app.config import Settings
from app.instance_lock import InstanceLock
from app.metrics import MULTIPROCESS_DIR
from pipeline.parent_death import die_with_parent
from storage import jobs
from storage.db import Database
from storage.models import utcnow
from tasks.celery_app import ALL_QUEUES, ROLE_QUEUES


# gunicorn's gevent worker reads every request head (request line and headers) under its
# keep-alive timer, so this also bounds how long a half-sent request (slowloris) is kept.
REQUEST_HEAD_SECONDS = 5
# gunicorn's own line per request, with the id the app gave it (app/logs.py) to find its lines.
ACCESS_LOG_FORMAT = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
# On shutdown, connections still open after this (idle websockets, turns) are closed.
GRACEFUL_SECONDS = 10


class WebServer:
    """gunicorn with ``GNOSI_WEB_PROCESSES`` gevent workers, run as its own interpreter
    (``python -m gunicorn``).

    Every connection is a greenlet, so idle websockets and slow requests cannot take the threads
    HTTP needs (docs/decisions/0007); several processes, so that one GIL does not serialise every
    chat turn and search. Why a child process: this one has already built the Flask
    and Celery apps to send the start-up sweep, so their locks, threads and SSL contexts exist
    here, and gevent must patch before those are made. The child's master imports only gunicorn
    and ``serving.worker``; its worker patches, then loads ``app:create_app()`` (no preload).
    What the processes must agree on (websocket caps, shared-mode turn order) is kept in files
    under ``LOCAL_DATA/system/web``; metrics are merged by prometheus_client's multiprocess mode.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def command(self) -> list[str]:
        settings = self.settings
        return [
            sys.executable, "-m", "gunicorn", "app:create_app()",
            "--bind", f"{settings.host}:{settings.port}",
            "--workers", str(settings.web_processes),
            "--worker-class", "serving.worker.JsonErrorGeventWorker",
            "--worker-connections", str(settings.web_connections),
            "--keep-alive", str(REQUEST_HEAD_SECONDS),
            "--graceful-timeout", str(GRACEFUL_SECONDS),
            "--timeout", "120",
            "--access-logfile", "-",
            "--access-logformat", ACCESS_LOG_FORMAT,
            "--no-control-socket",
            "--config", "python:serving.hooks",
        ]

    def run(self) -> None:
        """Serve until gunicorn exits; SIGTERM, SIGINT and SIGHUP sent to this process reach it.
        gunicorn dies with this process (its own workers follow their master)."""
        metrics_dir = tempfile.mkdtemp(prefix="gnosi-metrics-")  # fresh each start (app/metrics.py)
        process = subprocess.Popen(
            self.command(),
            env={**os.environ, MULTIPROCESS_DIR: metrics_dir},
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        forwarded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        previous = {sig: signal.signal(sig, lambda signum, _frame: process.send_signal(signum)) for sig in forwarded}
        try:
            returncode = process.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            shutil.rmtree(metrics_dir, ignore_errors=True)
        if returncode:
            raise SystemExit(returncode)


# The embedded worker's Celery node name, and so the start of the lease owner of every job it
# claims (tasks/ingest.py: "<node>/<pid>"). A fixed name, not one per pid or per LOCAL_DATA path,
# so a later start recognises its predecessor's leases even after a new pid, a moved data folder
# or a container's new hostname. The beat lock keeps it unique: one embedded worker per LOCAL_DATA.
EMBEDDED_NODE = "gnosi-embedded"


def worker_command(
    queues: str, concurrency: int, loglevel: str = "WARNING", beat: bool = False, node: str | None = None
) -> list[str]:
    """``beat`` embeds the scheduler that runs the job sweeper; exactly one worker per LOCAL_DATA
    may have it (its starter holds the beat lock). ``node`` defaults to a name that says the
    worker's role and is unique per process (``coordinator-<pid>@host``, ``extract-<pid>@host``),
    so Flower shows who is who."""
    return [
        sys.executable, "-m", "celery", "-A", "tasks.worker", "worker",
        "-Q", queues, "-c", str(concurrency), "--loglevel", loglevel, "-E",
        "-n", node or f"{role_of(queues)}-{os.getpid()}@%h", *(["-B"] if beat else []),
    ]


def role_of(queues: str) -> str:
    """The role whose queues a worker serves, the one queue it serves, or ``worker``."""
    names = {name.strip() for name in queues.split(",") if name.strip()}
    role = next((role for role, served in ROLE_QUEUES.items() if names == set(served)), None)
    return role or (names.pop() if len(names) == 1 else "worker")


def prepare_embedded_broker(celery_app: Celery) -> None:
    """Create kombu's tables once, before any worker starts: two workers racing to create them fail."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel  # noqa: B018 - opening the channel creates the tables


def end_leases_of_dead_embedded_worker(settings: Settings) -> datetime:
    """Run while holding the beat lock: every embedded worker of this LOCAL_DATA held it for its
    whole life, so none is alive and the leases they hold are void now, not when they run out (up
    to GNOSI_JOB_LEASE_SECONDS). Leases of other workers (`gnosi worker`) may be alive: untouched.

    Returns the moment from which the previous worker is known dead: any message it had taken off
    the broker died with it, so jobs queued before then may have lost theirs (tasks/sweeper.py).
    """
    known_dead_since = utcnow()
    database = Database(settings.database_path)
    try:
        with database.session() as session:
            jobs.expire_leases_of(session, f"{EMBEDDED_NODE}@")
    finally:
        database.dispose()  # no SQLite connection may cross gunicorn's fork of the web worker
    return known_dead_since


def start_embedded_worker(concurrency: int, beat_lock: InstanceLock) -> subprocess.Popen:
    """Start the worker (every queue, with beat), dying with serve and holding the beat lock.

    The worker inherits the lock's open file and serve closes its own descriptor, so the lock
    lives exactly as long as the worker's processes (its pool processes inherit it too). Serve
    must not keep it: gunicorn forks the web worker after this, and a web worker finishing its
    requests after a SIGKILLed serve would refuse the restart for nothing.
    """
    command = worker_command(",".join(ALL_QUEUES), concurrency, beat=True, node=f"{EMBEDDED_NODE}@%h")
    dies_with_serve = functools.partial(die_with_parent, os.getpid())
    worker = subprocess.Popen(command, pass_fds=(beat_lock.fd,), preexec_fn=dies_with_serve)
    beat_lock.describe(f"gnosi serve (pid {os.getpid()}) and its embedded worker (pid {worker.pid})")
    beat_lock.close()
    return worker


def stop_worker(worker: subprocess.Popen) -> None:
    """A warm shutdown (running tasks finish), cut short after 30 s."""
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()


def serve(settings: Settings, beat_lock: InstanceLock | None, *, worker_concurrency: int) -> None:
    """Serve until gunicorn stops. On the embedded broker the caller has taken ``beat_lock`` (so a
    second start is refused before it changes anything); the worker started here keeps it."""
    from app import create_app

    celery_app = create_app(settings).extensions["celery"]
    worker = None
    sweep: dict[str, str] = {}
    settings.shared_secret()  # created before any worker reads it
    if settings.embedded:
        assert beat_lock is not None, "the embedded worker runs beat: its starter must hold the beat lock"
        prepare_embedded_broker(celery_app)
        sweep["lost_before"] = end_leases_of_dead_embedded_worker(settings).isoformat()
        worker = start_embedded_worker(worker_concurrency, beat_lock)
    celery_app.send_task("sweep_jobs", kwargs=sweep)  # jobs queued or running before a restart resume now
    watch = WorkerWatch(worker) if worker is not None else None
    try:
        WebServer(settings).run()
    finally:
        if watch is not None:
            watch.stop()
    if watch is not None and watch.died:
        raise SystemExit(f"the embedded worker ended on its own (exit status {worker.returncode}); serve stopped too")


class WorkerWatch:
    """Stops serving when the embedded worker dies on its own (killed for memory, say).

    Serve would otherwise accept jobs nobody runs, and with the worker its beat lock is gone, so a
    second serve could start beside it. Serving stops instead, with a non-zero status, so whoever
    supervises serve restarts it whole (and the restart resumes the jobs at once).
    """

    def __init__(self, worker: subprocess.Popen) -> None:
        self.worker = worker
        self.died = False
        self._stopping = False
        threading.Thread(target=self._watch, name="embedded-worker-watch", daemon=True).start()

    def _watch(self) -> None:
        self.worker.wait()
        if not self._stopping:
            self.died = True
            os.kill(os.getpid(), signal.SIGTERM)  # WebServer.run passes it on to gunicorn

    def stop(self) -> None:
        self._stopping = True
        stop_worker(self.worker)
