"""``gnosi serve --reload``, for development: the whole service restarts when a backend source
file changes.

The whole service, not only the web processes (gunicorn's own ``--reload``): the embedded worker
runs ``pipeline``, ``storage`` and ``tasks`` too, and a web process on new code beside a worker on
old code is worse than no reload. watchfiles supervises ``gnosi serve`` as a child process and
restarts it on a change, as uvicorn and Django's runserver do.
"""
from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path

import watchfiles

WATCHED_PACKAGES = ("app", "pipeline", "storage", "tasks", "serving")
# How long a restart waits for the old serve to stop: it stops its embedded worker warmly, for up
# to 30 s (app.serve.stop_worker), and only then gives the beat lock up for the new one.
STOP_SECONDS = 40
# How long the new serve waits for that lock, should the old worker's last process still hold it.
LOCK_WAIT_SECONDS = 60

log = logging.getLogger("gnosi.reload")


def watched_folders() -> list[Path]:
    """The folders of the packages this process imported (a checkout, or a copy on PYTHONPATH)."""
    root = Path(__file__).resolve().parent.parent
    return [root / name for name in WATCHED_PACKAGES]


def serve_reloading(serve_args: list[str]) -> None:
    """Run ``gnosi serve serve_args`` until interrupted, restarting it when a ``.py`` file changes."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    folders = watched_folders()
    log.info("gnosi: reloading on changes under %s", ", ".join(str(folder) for folder in folders))
    command = [sys.executable, "-m", "app.cli", "serve", *serve_args, "--lock-wait", str(LOCK_WAIT_SECONDS)]
    watchfiles.run_process(
        *folders,
        target=shlex.join(command),
        target_type="command",
        watch_filter=watchfiles.PythonFilter(),
        callback=_announce,
        sigint_timeout=STOP_SECONDS,
    )


def _announce(changes: set[tuple[watchfiles.Change, str]]) -> None:
    changed = sorted({Path(path).name for _, path in changes})
    log.info("gnosi: %s changed, restarting", ", ".join(changed))
