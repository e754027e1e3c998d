"""Logs that say which request, task, job, notebook and source a line is about.

Every line of the web and worker processes carries the ids it is about, from where they are
known: a request's id (``X-Request-ID``, taken from the client when well-formed, else made here,
and sent back), the notebook a route names, the running Celery task's id and name, and the job and
source a task binds with ``log_ids``. ``GNOSI_LOG_FORMAT=json`` writes one JSON object per line
(python-json-logger) for log collectors; ``text`` (the default) appends the ids as ``key=value``.
Celery configures its own handlers in workers; ``adopt`` gives them the same format
(tasks/worker.py).
"""
from __future__ import annotations

import logging
import re
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from celery import current_task
from flask import Flask, Response, g, has_request_context, request
from pythonjsonlogger.json import JsonFormatter

from app.config import Settings

ID_FIELDS = ("request_id", "notebook_id", "job_id", "source_id", "task_id", "task_name")
REQUEST_ID_HEADER = "X-Request-ID"
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_TEXT = "%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s"
# Libraries that log every call at INFO (httpx: each internal API request of an extract worker;
# httpx2, which authlib's Drive clients are made of: each Drive request; alembic: its plugins,
# whenever a probe reads the schema's head): heard from at WARNING, or DEBUG.
_CHATTY = ("httpx", "httpx2", "alembic.runtime.plugins")
_bound: ContextVar[dict[str, str]] = ContextVar("log_ids", default={})  # noqa: B039 (never mutated)


@contextmanager
def log_ids(**ids: str | None) -> Iterator[None]:
    """Lines logged inside carry these ids (None values are left out)."""
    token = _bound.set({**_bound.get(), **{name: value for name, value in ids.items() if value}})
    try:
        yield
    finally:
        _bound.reset(token)


def current_ids() -> dict[str, str]:
    ids = dict(_bound.get())
    if has_request_context():
        ids.setdefault("request_id", g.get("request_id"))
        notebook_id = (request.view_args or {}).get("notebook_id")
        if notebook_id:
            ids.setdefault("notebook_id", notebook_id)
    if current_task and current_task.request.id:  # a proxy: false outside a task
        ids.setdefault("task_id", current_task.request.id)
        ids.setdefault("task_name", current_task.name)
    return {name: value for name, value in ids.items() if value}


class IdsFilter(logging.Filter):
    """Puts the ids on every record a handler emits (a handler filter sees every logger's lines)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in current_ids().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = " ".join(f"{name}={getattr(record, name)}" for name in ID_FIELDS if getattr(record, name, None))
        return f"{line} [{ids}]" if ids else line


def formatter(settings: Settings) -> logging.Formatter:
    if settings.log_format == "json":
        return JsonFormatter(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            json_ensure_ascii=False,
        )
    return TextFormatter(_TEXT)


def adopt(logger: logging.Logger, settings: Settings) -> None:
    """Give ``logger``'s handlers (Celery's, gunicorn's) this instance's format and ids."""
    for handler in logger.handlers:
        handler.setFormatter(formatter(settings))
        if not any(isinstance(existing, IdsFilter) for existing in handler.filters):
            handler.addFilter(IdsFilter())


class _OurHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the root handler installed here, so a second app in one process adds no other."""


def configure(settings: Settings) -> None:
    """Root logging to stderr in the chosen format, once per process; gunicorn's own loggers
    (its error and access logs, present when it serves the app) in the same format."""
    root = logging.getLogger()
    ours = next((handler for handler in root.handlers if isinstance(handler, _OurHandler)), None)
    if ours is None:
        ours = _OurHandler(sys.stderr)
        ours.addFilter(IdsFilter())
        root.addHandler(ours)
    ours.setFormatter(formatter(settings))
    root.setLevel(settings.log_level.upper())
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if settings.log_level == "debug" else logging.WARNING)
    for name in ("gunicorn.error", "gunicorn.access"):
        adopt(logging.getLogger(name), settings)


def register_request_ids(app: Flask) -> None:
    """Each request gets an id, echoed in ``X-Request-ID`` and on every line it logs."""

    @app.before_request
    def _take_request_id() -> None:
        offered = request.headers.get(REQUEST_ID_HEADER, "")
        g.request_id = offered if _CLIENT_REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex

    @app.after_request
    def _send_request_id(response: Response) -> Response:
        if "request_id" in g:
            response.headers[REQUEST_ID_HEADER] = g.request_id
        return response
