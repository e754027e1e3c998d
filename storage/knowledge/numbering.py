"""Version numbers: each identity's versions count 1, 2, … (the unique constraint on the number
makes two writers racing for one number fail rather than share it)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session


def next_number(session: Session, column: Any, where: ColumnElement[bool]) -> int:
    """One more than the highest ``column`` among the rows ``where`` selects (1 for none)."""
    return (session.scalar(select(func.max(column)).where(where)) or 0) + 1
