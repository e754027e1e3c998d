"""Entry point for ``celery -A tasks.worker worker``: builds the app from the environment."""
from __future__ import annotations

import logging
import os
from importlib import import_module

from celery import signals

from app import create_app, logs
from pipeline.parent_death import die_with_parent
from tasks.ingest import SOURCE_PROCESSING

flask_app = create_app()
celery_app = flask_app.extensions["celery"]

# Imported in the worker's main process, before it forks its beat process (``-B``).
_WORKER_PID = os.getpid()


@signals.beat_embedded_init.connect
def _beat_dies_with_its_worker(**_: object) -> None:
    """Celery's pool processes die with their worker (SIGKILL on parent death) but its embedded
    beat process does not: a SIGKILLed worker left beat sending sweeps, a second scheduler beside
    the next worker's. Set the same parent-death signal on beat."""
    die_with_parent(_WORKER_PID)


@signals.worker_init.connect
def _load_extractors_before_forking(**_: object) -> None:
    """The extract and chunk steps load the extractors on first use (web processes never do);
    loaded here, in the worker's main process, every pool process starts with them."""
    import_module(SOURCE_PROCESSING)


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _our_log_format(logger: logging.Logger, **_: object) -> None:
    """Celery's handlers (its task logger's, and the root's where it made one) write in this
    instance's format, with the task's and job's ids (app/logs.py)."""
    logs.adopt(logger, flask_app.extensions["gnosi"].settings)
