"""How many rows of a knowledge table a notebook has: the total a paged list shows."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.models import Notebook, in_notebook


def count_in_notebook(session: Session, model: Any, notebook: Notebook) -> int:
    return session.scalar(select(func.count()).select_from(model).where(in_notebook(model, notebook))) or 0
