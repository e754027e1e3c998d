"""Who is asking, and in which vault and workspace: the filter on every query."""
from __future__ import annotations

from dataclasses import dataclass

ROLES = ("viewer", "editor", "admin")


@dataclass(frozen=True)
class Scope:
    vault_hash: str
    workspace_id: str


@dataclass(frozen=True)
class Principal:
    user_id: str
    user_name: str
    role: str
    scope: Scope

    @property
    def can_write(self) -> bool:
        """Viewers read; editors and admins may create notebooks and converse."""
        return self.role in ("editor", "admin")
