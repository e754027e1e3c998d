"""A user's empty private notebook, written straight into a migrated database: for storage tests
and benches that need rows hanging off a notebook, not a running instance."""
from __future__ import annotations

from sqlalchemy.orm import Session

from storage import accounts
from storage.models import Notebook


def private_notebook(session: Session, vault: str, user: str = "alice") -> Notebook:
    """A new editor ``user`` of workspace ``lab`` and a private notebook of theirs, flushed."""
    owner, _ = accounts.add_user(session, vault, user, "lab", "editor")
    notebook = Notebook(vault_hash=vault, workspace_id="w", title="n", visibility="private",
                        conversation_mode="private", creator_id=owner.id, table_id="t")
    session.add(notebook)
    session.flush()
    return notebook
