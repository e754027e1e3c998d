"""The Celery app, made from the Flask app as in Flask's own Celery example.

Each task runs inside the Flask app context, so it reaches settings and storage through
``current_app`` like a request does, and no module-level globals need patching in tests.
"""
from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

from celery import Celery, Task
from flask import Flask
from kombu import Queue

from app.config import Settings
from tasks import embedded_broker

embedded_broker.register()

COORDINATOR = "coordinator"
EXTRACT = "extract"
# Its own queue so that a worker serving both takes a source's chunk step before the next
# extraction (Redis and the embedded broker both take turns between a worker's queues): in one
# queue, every chunk message waited behind every extract order sent before it, so nothing was
# indexed until all sources were extracted and a core stood idle meanwhile (docs/decisions/0008).
CHUNK = "chunk"
# Analysis steps (tasks.analysis) and knowledge stages (tasks.knowledge) read notebooks.sqlite3,
# so workers that hold it run them: the coordinator role. Their own queue, so that a long analysis
# or source note (hundreds of steps or units, each seconds with a model) does not hold up
# ingestion's steps: a worker takes turns between its queues.
ANALYSIS = "analysis"
# The queues of a worker of each role: an extract worker reads and chunks sources.
ROLE_QUEUES = {COORDINATOR: (COORDINATOR, ANALYSIS), EXTRACT: (EXTRACT, CHUNK)}
ALL_QUEUES = (COORDINATOR, EXTRACT, CHUNK, ANALYSIS)
# Tasks are acknowledged when they end (acks_late), and Redis hands a task that long unacknowledged
# to another worker: an hour, by default, is less than OCR of a long scanned book takes (500 pages
# at easyocr's 40 s), which would then be read twice at once. A worker that died is found by its
# job's lease (the sweeper) well before this, so a long wait here loses nothing.
REDELIVER_AFTER_SECONDS = 12 * 3600


def embedded_broker_connection(path: Path) -> sqlite3.Connection:
    """A connection to the embedded broker's file in WAL mode with ``synchronous=NORMAL``.

    kombu's SQLite transport commits every publish and every delivery; in SQLite's default
    rollback journal with full sync each of those commits waits on the disk two or three times
    (0.7 ms measured here, against 0.02 ms). With NORMAL a commit survives a crash of the process,
    and only an operating-system crash can lose the last ones: what a lost message carried is
    sent again from the job rows in notebooks.sqlite3 (the sweeper), like any message lost with a
    worker.
    """
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def celery_config(settings: Settings) -> dict:
    embedded: dict = {}
    if settings.embedded:  # kombu passes the transport options to SQLAlchemy's create_engine
        embedded["broker_transport_options"] = {
            "creator": functools.partial(embedded_broker_connection, settings.embedded_broker_path),
        }
    else:  # Redis re-delivers an unacknowledged task after this long, even to a worker still on it
        embedded["broker_transport_options"] = {"visibility_timeout": REDELIVER_AFTER_SECONDS}
    return {
        **embedded,
        "broker_url": settings.celery_broker_url,
        "broker_connection_retry_on_startup": True,
        "task_ignore_result": True,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_default_queue": COORDINATOR,
        "task_queues": tuple(Queue(name) for name in ALL_QUEUES),
        "task_routes": {
            "ingest.extract": {"queue": EXTRACT}, "ingest.chunk": {"queue": CHUNK}, "analysis.*": {"queue": ANALYSIS},
            "knowledge.*": {"queue": ANALYSIS},
        },
        "worker_hijack_root_logger": False,
        "beat_schedule": {
            "sweep-jobs": {"task": "sweep_jobs", "schedule": float(settings.sweep_interval_seconds)},
            "sync-linked-folders": {"task": "sync.scheduled", "schedule": float(settings.sync_round_seconds)},
        },
        "beat_schedule_filename": str(settings.system_dir / "celerybeat-schedule"),
    }


def celery_init_app(app: Flask, settings: Settings) -> Celery:
    class FlaskTask(Task):
        def __call__(self, *args: object, **kwargs: object) -> object:
            with app.app_context():
                return self.run(*args, **kwargs)

    celery_app = Celery(app.name, task_cls=FlaskTask)
    celery_app.config_from_object(celery_config(settings))
    if settings.embedded:
        settings.ensure_dirs()
    celery_app.set_default()
    import tasks.analysis  # noqa: F401  (registers the shared tasks on this app)
    import tasks.ingest  # noqa: F401
    import tasks.knowledge  # noqa: F401
    import tasks.sweeper  # noqa: F401
    import tasks.sync  # noqa: F401

    app.extensions["celery"] = celery_app
    return celery_app
