"""Web and beat processes do not load PDFium or yt-dlp (commit 03cd8f3: they cost a second of
every start and memory in every web process): the extractors load on first use, in workers."""
from __future__ import annotations

import subprocess
import sys

from support.services import REPO

HEAVY = ("pypdfium2", "yt_dlp")


def test_the_web_app_and_the_beat_tasks_import_without_the_extractors() -> None:
    probe = ("import sys, app, app.api, tasks.sweeper, tasks.knowledge; "
             f"print(','.join(name for name in {HEAVY!r} if name in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "", f"loaded at import: {loaded}"
