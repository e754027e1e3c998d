"""Find the notebook a request names, as the caller may see it."""
from __future__ import annotations

from sqlalchemy.orm import Session

from app.errors import ApiError
from storage import notebooks
from storage.models import Notebook
from storage.scope import Principal


def visible_notebook(session: Session, principal: Principal, notebook_id: str) -> Notebook:
    """The notebook if the caller may see it; otherwise 404, so existence never leaks."""
    notebook = notebooks.find_visible(session, principal, notebook_id)
    if notebook is None:
        raise ApiError(404, "NOTEBOOK_NOT_FOUND", "No such notebook.")
    return notebook


def owned_notebook(session: Session, principal: Principal, notebook_id: str) -> Notebook:
    """The notebook if its ACL makes the caller an owner (its creator, unless the ACL says
    otherwise): only owners manage sources and settings."""
    notebook = visible_notebook(session, principal, notebook_id)
    if not notebooks.is_owner(session, principal, notebook):
        raise ApiError(403, "NOT_NOTEBOOK_OWNER", "Only the notebook's creator can do this.")
    return notebook
