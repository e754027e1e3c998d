"""The notebook ACL is the source of truth for who sees a private notebook and who manages one:
``creator_id`` only records who created it. Scoped by vault and workspace like every row."""
from __future__ import annotations

from sqlalchemy import delete

from storage import accounts, notebooks
from storage.db import Database
from storage.models import NotebookAcl
from storage.scope import Principal

VAULT = "vault-hash"


def _principals(db: Database) -> dict[str, Principal]:
    with db.session() as session:
        people = {name: accounts.add_user(session, VAULT, name, workspace, "editor")[0].id
                  for name, workspace in (("alice", "lab"), ("bob", "lab"), ("eve", "elsewhere"))}
        eve_in_lab = accounts.add_user(session, VAULT, "eve", "lab", "editor")[0]
        lab = accounts.ensure_workspace(session, VAULT, "lab").id
        elsewhere = accounts.ensure_workspace(session, VAULT, "elsewhere").id
    with db.reader() as session:
        found = {name: accounts.principal_of(session, VAULT, user_id, lab if name != "eve" else elsewhere)
                 for name, user_id in people.items()}
        found["eve_in_lab"] = accounts.principal_of(session, VAULT, eve_in_lab.id, lab)
    assert all(found.values())
    return found  # type: ignore[return-value]


def _create(db: Database, creator: Principal) -> str:
    with db.session() as session:
        return notebooks.create(
            session, creator, title="Private", visibility="private", conversation_mode="private",
            table_id="table", resource_ids=["r1"],
        ).id


def _sees_and_owns(db: Database, who: Principal, notebook_id: str) -> tuple[bool, bool]:
    with db.reader() as session:
        notebook = notebooks.find_visible(session, who, notebook_id)
        return notebook is not None, bool(notebook) and notebooks.is_owner(session, who, notebook)


def test_the_acl_not_the_creator_column_grants_access(db: Database) -> None:
    people = _principals(db)
    notebook_id = _create(db, people["alice"])
    assert _sees_and_owns(db, people["alice"], notebook_id) == (True, True)
    assert _sees_and_owns(db, people["bob"], notebook_id) == (False, False)

    with db.session() as session:
        session.add(NotebookAcl(vault_hash=VAULT, workspace_id=people["bob"].scope.workspace_id,
                                notebook_id=notebook_id, user_id=people["bob"].user_id, role="owner"))
        session.execute(delete(NotebookAcl).where(NotebookAcl.user_id == people["alice"].user_id))
    assert _sees_and_owns(db, people["bob"], notebook_id) == (True, True)
    assert _sees_and_owns(db, people["alice"], notebook_id) == (False, False), "creator_id alone grants nothing"

    with db.session() as session:
        session.add(NotebookAcl(vault_hash=VAULT, workspace_id=people["alice"].scope.workspace_id,
                                notebook_id=notebook_id, user_id=people["alice"].user_id, role="reader"))
    assert _sees_and_owns(db, people["alice"], notebook_id) == (True, False), "a reader entry does not manage"


def test_an_acl_entry_of_another_workspace_grants_nothing(db: Database) -> None:
    people = _principals(db)
    notebook_id = _create(db, people["alice"])
    with db.session() as session:
        session.add(NotebookAcl(vault_hash=VAULT, workspace_id=people["eve"].scope.workspace_id,
                                notebook_id=notebook_id, user_id=people["eve"].user_id, role="owner"))
    assert _sees_and_owns(db, people["eve"], notebook_id) == (False, False)
    with db.reader() as session:
        assert notebooks.list_visible(session, people["eve"], q=None, page=1, per_page=10).total == 0
    # The same user, acting in the notebook's workspace, is named by the ACL row only in that
    # row's workspace: the row above is scoped elsewhere, so still nothing.
    assert _sees_and_owns(db, people["eve_in_lab"], notebook_id) == (False, False)
