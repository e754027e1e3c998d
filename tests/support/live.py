"""Run the real service (gnosi serve, plus a worker when a broker is given) and talk HTTP to it."""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from support.services import REPO, celery_worker, free_port, service_env, stop, wait_for_port

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

    def wait_for_job(self, notebook_id: str, timeout: float = 180) -> dict[str, Any]:
        """Poll the notebook until its job ended; returns the final notebook detail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            detail = self.get(f"/api/notebooks/{notebook_id}").json()
            job = detail.get("job")
            if job and job["state"] in ("succeeded", "failed", "cancelled"):
                return detail
            time.sleep(0.3)
        raise TimeoutError(f"ingestion of {notebook_id} did not finish: {detail}")


@contextmanager
def running_service(tmp: Path, vault: Path, table_id: str, broker_url: str = "") -> Iterator[Api]:
    """`gnosi serve` on a free port; with a broker URL also a separate `celery worker` process."""
    env = service_env(tmp / "local-data", vault, table_id, broker_url)
    token = add_user(env, "alice", "lab", "editor")
    port = free_port()
    env["GNOSI_PORT"] = str(port)
    with ExitStack() as stack:
        log = (tmp / "serve.log").open("wb")
        stack.callback(log.close)
        serve = subprocess.Popen([GNOSI, "serve"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        stack.callback(stop, serve)
        if broker_url:
            stack.enter_context(celery_worker(env, tmp / "worker.log"))
        try:
            wait_for_port(port, timeout=60)
        except TimeoutError:
            raise RuntimeError((tmp / "serve.log").read_text(errors="replace")) from None
        yield Api(f"http://127.0.0.1:{port}", token)
