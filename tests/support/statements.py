"""The SQL a block of code runs, for tests that promise a query is not (or is only once) made."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session


@contextmanager
def recorded_statements(target: Session | Engine) -> Iterator[list[str]]:
    """Every statement run on ``target``'s connection (a session's, or any of an engine's: what
    the requests a test makes run)."""
    statements: list[str] = []

    def record(connection: Any, cursor: Any, statement: str, *rest: Any) -> None:
        statements.append(statement)

    bind = target.get_bind() if isinstance(target, Session) else target
    event.listen(bind, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(bind, "before_cursor_execute", record)
