"""In-process harness for the ingestion task contract (tasks/contract.py).

One ``Instance`` is the real Flask app on a real migrated SQLite database under ``tmp_path``,
served over real HTTP on 127.0.0.1 (the extract steps reach it through the internal API as a
remote extract worker would), with Celery's own embedded test worker (``start_worker``) consuming
every queue from the ``memory://`` broker in a thread of this process. Tasks therefore run in this
process, so ``monkeypatch`` reaches them, and each test drives the real five-step chain.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun, task_prerun
from celery.worker import WorkController
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from werkzeug.serving import make_server

from app import create_app
from app.config import Settings
from storage import accounts
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Chunk, Job, Notebook, Source
from support.services import service_env
from support.vault import VaultBuilder
from tasks.celery_app import ALL_QUEUES
from tasks.ingest import _recent

T = TypeVar("T")
FINAL_JOB_STATES = ("succeeded", "failed", "cancelled")
MAX_ATTEMPTS = 3  # GNOSI_JOB_MAX_ATTEMPTS unless a test sets its own
DEADLINE_S = 60.0


def wait_for(probe: Callable[[], T | None], what: str | Callable[[], str], timeout: float = DEADLINE_S) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` at the deadline
    (a callable ``what`` is asked then, to describe the state things were left in)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")


class _Forward:
    """A WSGI app that forwards to the Flask app made later: the server must be bound first, since
    the app's settings (frozen) need the server's URL as their internal API URL."""

    app: Flask | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        assert self.app is not None
        return self.app(environ, start_response)


@dataclass
class Lab:
    """What outlives an instance: the vault (two corpus PDFs), LOCAL_DATA, the users' tokens."""

    tmp_path: Path
    vault: VaultBuilder
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def local_data(self) -> Path:
        return self.tmp_path / "local-data"


@dataclass
class Instance:
    """A running API instance with its worker, and the reads the tests make of its database."""

    app: Flask
    celery: Celery
    settings: Settings
    client: FlaskClient
    lab: Lab

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.lab.tokens['alice']}"}
        return self.client.open(path, method=method, headers=headers, **kwargs)

    def create_notebook(self, resource_ids: list[str]) -> tuple[str, str]:
        """Create a notebook through the API (which queues its first job); (notebook id, job id)."""
        response = self.call("POST", "/api/notebooks", json={"title": "Steps", "resource_ids": resource_ids})
        assert response.status_code == 201, response.json
        return response.json["id"], response.json["job"]["id"]

    def read(self, query: Callable[[Any], T]) -> T:
        """Run ``query(session)`` on a fresh read snapshot (rows are detached, attributes loaded)."""
        with self.app.extensions["gnosi"].db.reader() as session:
            return query(session)

    def write(self, change: Callable[[Any], T]) -> T:
        with self.app.extensions["gnosi"].db.session() as session:
            return change(session)

    def job(self, job_id: str) -> Job:
        return self.read(lambda s: s.get(Job, job_id))

    def notebook(self, notebook_id: str) -> Notebook:
        return self.read(lambda s: s.get(Notebook, notebook_id))

    def sources(self, revision_id: str | None) -> list[Source]:
        return self.read(lambda s: list(s.scalars(select(Source).where(Source.revision_id == revision_id))))

    def chunk_count(self, revision_id: str | None, source_id: str | None = None) -> int:
        where = [Chunk.revision_id == revision_id] + ([Chunk.source_id == source_id] if source_id else [])
        return self.read(lambda s: s.scalar(select(func.count()).select_from(Chunk).where(*where)))

    wait_for = staticmethod(wait_for)

    def wait_job_end(self, job_id: str, timeout: float = DEADLINE_S) -> Job:
        """The job once it reached a final state (a job left running fails the test at the deadline)."""

        def left() -> str:
            job = self.job(job_id)
            progress = f"{job.attempts} attempt(s), {job.done}/{job.total} sources done"
            return f"job {job_id} to end; it is {job.state} after {progress}"

        return wait_for(lambda: (job := self.job(job_id)).state in FINAL_JOB_STATES and job, left, timeout)


@contextmanager
def _instance(lab: Lab, env: dict[str, str]) -> Iterator[Instance]:
    forward = _Forward()
    server = make_server("127.0.0.1", 0, forward, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        environ = service_env(lab.local_data, lab.vault.root, lab.vault.table_id, broker_url="memory://")
        environ.update(
            GNOSI_INTERNAL_API_URL=f"http://127.0.0.1:{server.server_port}",
            GNOSI_JOB_MAX_ATTEMPTS=str(MAX_ATTEMPTS),
        )
        environ.update(env)
        settings = Settings.from_env(environ)
        settings.ensure_dirs()
        upgrade(settings.database_path)
        if not lab.tokens:
            with Database(settings.database_path).session() as session:
                lab.tokens["alice"] = accounts.add_user(session, settings.vault_hash, "alice", "lab", "editor")[1]
        app = create_app(settings)
        forward.app = app
        celery: Celery = app.extensions["celery"]
        # kombu's virtual transports poll an empty queue once a second by default: each of the
        # five hops would wait up to that long.
        celery.conf.broker_transport_options = {"polling_interval": 0.01}
        celery.control.purge()  # the memory broker is process-wide: drop an earlier test's leftovers
        with start_worker(
            celery, pool="solo", perform_ping_check=False, queues=list(ALL_QUEUES), shutdown_timeout=60
        ) as worker:
            _stop_quickly(worker)
            yield Instance(app, celery, settings, app.test_client(), lab)
        services = app.extensions["gnosi"]
        if "internal_api" in vars(services):  # made on first use (a cached property)
            services.internal_api.client.close()
        services.db.dispose()
    finally:
        server.shutdown()
        server.server_close()


def _stop_quickly(worker: WorkController) -> None:
    """Celery's blocking loop waits up to 2 s for a message before it looks at the stop flag, and
    its shutdown runs one more such wait: about 4 s per test for nothing. Cap that wait."""
    connection = worker.consumer.connection
    drain = connection.drain_events
    connection.drain_events = lambda timeout=None, **kw: drain(timeout=min(timeout or 0.1, 0.1), **kw)


@pytest.fixture(autouse=True)
def _no_extraction_held_over() -> Iterator[None]:
    """The extract step keeps its last extraction for the chunk step (and a retried upload); a
    chain a test cancelled leaves it there, and the next test of this process would not extract."""
    _recent.clear()
    yield
    _recent.clear()


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="Digital Millennium Copyright Act")
    vault.pdf_record("naacl", "naacl06-shinyama.pdf", title="Paraphrase acquisition")
    return Lab(tmp_path, vault)


@pytest.fixture
def launch(lab: Lab) -> Iterator[Callable[..., Instance]]:
    """``launch(**env)`` starts an instance on the lab's LOCAL_DATA, stopping the one before: one
    worker at a time, since the memory broker and Celery's default app are process-wide."""
    stack = ExitStack()

    def start(**env: str) -> Instance:
        stack.close()
        return stack.enter_context(_instance(lab, env))

    with stack:
        yield start


@pytest.fixture
def instance(launch: Callable[..., Instance]) -> Instance:
    return launch()


@dataclass
class StepLog:
    """What the worker ran, from Celery's own task signals: (task name, return value) in order,
    and actions to run in the worker thread just before a named task's next run."""

    ran: list[tuple[str, Any]] = field(default_factory=list)
    _before: dict[str, list[Callable[[], None]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def before_next(self, task_name: str, action: Callable[[], None]) -> None:
        self._before.setdefault(task_name, []).append(action)

    def returned(self, task_name: str) -> list[Any]:
        with self._lock:
            return [value for name, value in self.ran if name == task_name]

    def _on_prerun(self, sender: Any = None, **_: Any) -> None:
        actions = self._before.get(sender.name)
        if actions:
            actions.pop(0)()

    def _on_postrun(self, sender: Any = None, retval: Any = None, **_: Any) -> None:
        with self._lock:
            self.ran.append((sender.name, retval))


@pytest.fixture
def steps() -> Iterator[StepLog]:
    log = StepLog()
    task_prerun.connect(log._on_prerun, weak=False)
    task_postrun.connect(log._on_postrun, weak=False)
    yield log
    task_prerun.disconnect(log._on_prerun)
    task_postrun.disconnect(log._on_postrun)
