"""Fixtures shared by every test layer."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.services import CORPUS


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of real test files, read in place and never copied into the repo."""
    return CORPUS
