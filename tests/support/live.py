"""Run the real service (gnosi serve, worker processes, Redis) and talk HTTP to it."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from support.services import REPO, RedisProcess, free_port, redis_server, service_env, stop, wait_for_port

GNOSI = str(Path(sys.executable).parent / "gnosi")


def add_user(env: dict[str, str], name: str, workspace: str, role: str) -> str:
    """`gnosi user add` prints the token on its last line."""
    out = subprocess.run(
        [GNOSI, "user", "add", name, "--workspace", workspace, "--role", role],
        env=env, cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout
    return out.strip().splitlines()[-1]


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(path, params=params)

    def post(self, path: str, body: Any = None) -> httpx.Response:
        return self.http.post(path, json=body)

    def delete(self, path: str) -> httpx.Response:
        return self.http.delete(path)

    def patch(self, path: str, body: Any) -> httpx.Response:
        return self.http.patch(path, json=body)

    def chat(self, body: dict[str, Any]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
        """POST /api/chat and read the whole event stream: (status, [(event, data), ...])."""
        events: list[tuple[str, dict[str, Any]]] = []
        with self.http.stream("POST", "/api/chat", json=body, timeout=120) as response:
            if response.status_code != 200:
                response.read()
                return response.status_code, [("error", response.json())]
            name = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[len("event: "):]
                elif line.startswith("data: ") and name:
                    events.append((name, json.loads(line[len("data: "):])))
        return 200, events

    def create(self, resource_ids: list[str], title: str = "Notebook") -> str:
        response = self.post("/api/notebooks", {"title": title, "resource_ids": resource_ids})
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def wait_for_job(self, notebook_id: str, timeout: float = 180, job_id: str | None = None) -> dict[str, Any]:
        """Poll until the notebook's (given) job ended; returns the final notebook detail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            detail = self.get(f"/api/notebooks/{notebook_id}").json()
            job = detail.get("job")
            if job and job["state"] in ("succeeded", "failed", "cancelled") and job_id in (None, job["id"]):
                return detail
            time.sleep(0.3)
        raise TimeoutError(f"ingestion of {notebook_id} did not finish: {detail}")

    def wait_until(self, notebook_id: str, predicate, timeout: float = 120) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            detail = self.get(f"/api/notebooks/{notebook_id}").json()
            if predicate(detail):
                return detail
            time.sleep(0.2)
        raise TimeoutError(f"condition not reached for {notebook_id}: {detail}")


class Deployment:
    """One instance: its LOCAL_DATA, `gnosi serve`, and worker processes the test controls."""

    def __init__(self, stack: ExitStack, tmp: Path, vault: Path, table_id: str, broker_url: str,
                 **settings: str) -> None:
        self.stack = stack
        self.tmp = tmp
        self.env = service_env(tmp / "local-data", vault, table_id, broker_url)
        self.env.update(settings)
        # The checkout whose packages the service's processes import: this one, or the one an
        # explicit PYTHONPATH setting names (bench/ingest.py and bench/load.py measure an older
        # worktree with this virtualenv). It is their working directory too, because `python -m`,
        # gunicorn and celery put the working directory on sys.path ahead of PYTHONPATH.
        self.code = Path(settings.get("PYTHONPATH") or REPO)
        self.env["GNOSI_PORT"] = str(free_port())
        self.token = add_user(self.env, "alice", "lab", "editor")
        self.workers: dict[str, subprocess.Popen] = {}
        self.broker: RedisProcess | None = None
        self.web: subprocess.Popen | None = None
        self.api = Api(f"http://127.0.0.1:{self.env['GNOSI_PORT']}", self.token)

    @property
    def database(self) -> Path:
        return Path(self.env["LOCAL_DATA"]) / "system" / "notebooks.sqlite3"

    def user(self, name: str, role: str, workspace: str = "lab") -> Api:
        """Another account of this instance, as an API client."""
        return Api(self.api.http.base_url.__str__().rstrip("/"), add_user(self.env, name, workspace, role))

    def query(self, sql: str, *args: Any) -> list[tuple]:
        with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute(sql, args).fetchall()

    def start_web(self, *serve_args: str) -> None:
        log = (self.tmp / "serve.log").open("ab")
        self.stack.callback(log.close)
        process = subprocess.Popen(
            [GNOSI, "serve", *serve_args], env=self.env, cwd=self.code, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.stack.callback(stop, process)
        self.web = process
        try:
            wait_for_port(int(self.env["GNOSI_PORT"]), timeout=60, process=process)
            self._wait_until_answering(timeout=60)
        except (TimeoutError, RuntimeError):
            raise RuntimeError((self.tmp / "serve.log").read_text(errors="replace")) from None

    def _wait_until_answering(self, timeout: float) -> None:
        """gunicorn's master listens before its workers have loaded the app: wait for an answer
        (any: benches also start older checkouts, which have no /healthz)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.api.http.get("/healthz", timeout=5)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise TimeoutError("/healthz did not answer")

    def start_worker(self, name: str, queues: str = "coordinator,extract,chunk", *, beat: bool = False,
                     concurrency: int = 1, cwd: Path | None = None, **env: str) -> subprocess.Popen:
        """A real `celery worker` process in its own session (so a test can SIGKILL the group)."""
        command = [
            sys.executable, "-m", "celery", "-A", "tasks.worker", "worker", "-Q", queues, "-c", str(concurrency),
            "--loglevel", "INFO", "-n", f"{name}-{time.monotonic_ns()}@%h", *(["-B", "-s", str(self.tmp / f"beat-{name}")] if beat else []),
        ]
        return self.start_celery(name, command, cwd=cwd, **env)

    def start_celery(self, name: str, command: list[str], *, cwd: Path | None = None, **env: str) -> subprocess.Popen:
        """Run ``command`` (a Celery worker, or `gnosi worker`) until its log says it is ready."""
        log_path = self.tmp / f"worker-{name}.log"
        offset = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                command, env={**self.env, **env, "PYTHONPATH": str(self.code)}, cwd=cwd or self.code, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.stack.callback(self.kill_worker, name)
        deadline = time.monotonic() + 60
        while b"ready." not in log_path.read_bytes()[offset:]:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("worker did not start:\n" + log_path.read_text(errors="replace"))
            time.sleep(0.2)
        self.workers[name] = process
        return process

    def start_stateless_extractor(self, name: str) -> subprocess.Popen:
        """An extract worker that cannot see notebooks.sqlite3 or the vault: an empty LOCAL_DATA,
        another working directory, and only the API's URL and shared secret."""
        secret = (Path(self.env["LOCAL_DATA"]) / "system" / "internal-token").read_text().strip()
        elsewhere = self.tmp / name
        (elsewhere / "empty-local-data").mkdir(parents=True, exist_ok=True)
        return self.start_worker(
            name, "extract,chunk", cwd=elsewhere,
            LOCAL_DATA=str(elsewhere / "empty-local-data"),
            GNOSI_VAULT_PATH=str(elsewhere / "no-vault"),
            GNOSI_INTERNAL_API_URL=self.api.http.base_url.__str__().rstrip("/"),
            GNOSI_INTERNAL_TOKEN=secret,
        )

    def stop_web(self) -> None:
        """Stop `gnosi serve` as an operator does (SIGTERM), waiting until it has exited."""
        assert self.web is not None
        stop(self.web, timeout=60)

    def crash_web(self) -> None:
        """SIGKILL `gnosi serve` with everything it started (web workers, embedded Celery worker)."""
        assert self.web is not None
        os.killpg(self.web.pid, signal.SIGKILL)
        self.web.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.web.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)

    def kill_worker(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.workers.pop(name, None)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def extract_calls(self) -> int:
        """Extract steps run, counted from the workers' own logs of received extract tasks."""
        return self._log_lines(lambda line: "Task ingest.extract[" in line and "received" in line)

    def extractor_calls(self) -> int:
        """Extractions actually made (the extract step logs each one; a cache hit makes none)."""
        return self._log_lines(lambda line: "extractor read source " in line)

    def _log_lines(self, wanted: Callable[[str], bool]) -> int:
        return sum(
            1
            for path in self.tmp.glob("worker-*.log")
            for line in path.read_text(errors="replace").splitlines()
            if wanted(line)
        )


@contextmanager
def deployment(tmp: Path, vault: Path, table_id: str, *, redis: bool = True, **settings: str) -> Iterator[Deployment]:
    with ExitStack() as stack:
        broker = stack.enter_context(redis_server(tmp / "redis")) if redis else None
        deploy = Deployment(stack, tmp, vault, table_id, broker.url if broker else "", **settings)
        deploy.broker = broker
        yield deploy


@contextmanager
def running_service(tmp: Path, vault: Path, table_id: str, broker_url: str = "") -> Iterator[Api]:
    """`gnosi serve` on a free port; with a broker URL also a separate worker process."""
    with ExitStack() as stack:
        deploy = Deployment(stack, tmp, vault, table_id, broker_url)
        deploy.start_web()
        if broker_url:
            deploy.start_worker("main", concurrency=2)
        yield deploy.api
