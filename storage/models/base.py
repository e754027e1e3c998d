"""The declarative base, the scoping columns every row carries, ids and UTC time."""
from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    String,
    and_,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

if TYPE_CHECKING:
    from storage.models.notebooks import Notebook


def utcnow() -> datetime:
    """Naive UTC: SQLite stores no zone, so every timestamp is UTC by convention."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Scoped:
    vault_hash: Mapped[str] = mapped_column(String(32), index=True)
    workspace_id: Mapped[str] = mapped_column(String(32), index=True)


def in_notebook(model: Any, notebook: Notebook) -> ColumnElement[bool]:
    """Rows of ``model`` (a scoped table with ``notebook_id``) that belong to ``notebook``.

    The notebook id alone would do today, but the vault and workspace are part of every filter so
    that an id taken from another vault or workspace can never match (DESIGN: scope on every query).
    """
    return and_(
        model.notebook_id == notebook.id,
        model.vault_hash == notebook.vault_hash,
        model.workspace_id == notebook.workspace_id,
    )
