"""Fixtures shared by every test layer."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.services import CORPUS, REPO, free_port, stop, wait_for_port

FAKE_OPENAI_SERVER = REPO / "tests" / "support" / "fake_openai_server.py"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real test files, read in place and never copied into the repo."""
    return CORPUS


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[Callable[[list[dict]], tuple[str, Path]]]:
    """Start the scripted OpenAI-compatible server (a real process) with the given turns;
    returns its base URL (ending in /v1) and the log of request bodies it received."""
    processes: list[subprocess.Popen] = []

    def start(turns: list[dict]) -> tuple[str, Path]:
        script, log, port = tmp_path / "script.json", tmp_path / "requests.jsonl", free_port()
        script.write_text(json.dumps({"turns": turns}))
        command = [sys.executable, str(FAKE_OPENAI_SERVER), "--port", str(port), "--script", str(script), "--log", str(log)]
        processes.append(subprocess.Popen(command))
        wait_for_port(port, timeout=10)
        return f"http://127.0.0.1:{port}/v1", log

    yield start
    for process in processes:
        stop(process, timeout=5)
