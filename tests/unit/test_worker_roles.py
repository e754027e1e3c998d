"""Workers are named by the role their queues make (Flower shows who is who)."""
from __future__ import annotations

import pytest

from app.serve import role_of, worker_command


@pytest.mark.parametrize(("queues", "role"), [
    ("coordinator", "coordinator"),
    ("coordinator,analysis", "coordinator"),
    ("extract,chunk", "extract"),
    ("chunk, extract", "extract"),
    ("chunk", "chunk"),
    ("extract", "extract"),
    ("coordinator,extract,chunk", "worker"),
])
def test_a_worker_is_named_by_its_role(queues: str, role: str) -> None:
    assert role_of(queues) == role
    node = worker_command(queues, 1)[worker_command(queues, 1).index("-n") + 1]
    assert node.startswith(f"{role}-") and node.endswith("@%h")
