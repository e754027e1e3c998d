"""Fixtures shared by every test layer."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from support.services import CORPUS, fake_openai_server


def pytest_sessionstart(session: pytest.Session) -> None:
    """Without the corpus nearly every test fails on a missing file: say so once, up front."""
    if not (CORPUS / "MANIFEST.md").is_file():
        pytest.exit(f"No test corpus at {CORPUS}: check shared/ out beside the repository "
                    "(shared/corpus), or point GNOSI_CORPUS_DIR at a corpus folder.", returncode=4)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real test files, read in place and never copied into the repo."""
    return CORPUS


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[Callable[[list[dict]], tuple[str, Path]]]:
    """Start the scripted OpenAI-compatible server (a real process) with the given turns;
    returns its base URL (ending in /v1) and the log of request bodies it received."""
    with ExitStack() as stack:
        yield lambda turns: stack.enter_context(fake_openai_server(tmp_path, turns))
