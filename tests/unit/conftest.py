"""Fixtures of the unit tests."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.sandbox import DecoderProcess
from storage.db import Database
from storage.migrate import upgrade


@pytest.fixture
def new_decoder() -> Iterator[Callable[..., DecoderProcess]]:
    """Make decoder helpers of a test's own (policy as keyword arguments), ended after the test
    so that no helper outlives it."""
    made: list[DecoderProcess] = []

    def make(**policy: Any) -> DecoderProcess:
        made.append(DecoderProcess(**policy))
        return made[-1]

    yield make
    for process in made:
        process.close()


@pytest.fixture
def db(tmp_path: Path) -> Database:
    """A migrated, empty ``notebooks.sqlite3`` of the test's own."""
    upgrade(tmp_path / "notebooks.sqlite3")
    return Database(tmp_path / "notebooks.sqlite3")
