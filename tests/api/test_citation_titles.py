"""Citations are labelled with their record's title, also those stored before citations carried
one: they get it when the transcript is read, and the stored message stays as it was written."""
from __future__ import annotations

from storage import accounts, conversations
from storage.db import Database
from storage.models import Message, Notebook
from support_api import create_notebook


def test_a_citation_stored_without_a_title_is_read_with_its_records_title(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    settings = world.app.extensions["gnosi"].settings
    old = {"notebook_id": notebook_id, "resource_id": "dmca", "revision_id": "r", "source_id": "s",
           "chunk_id": "c", "locator": {"page": 1}, "quote": "q"}
    with Database(settings.database_path).session() as session:
        principal = accounts.principal_for_token(session, settings.vault_hash, world.tokens["alice"])
        assert principal is not None
        thread = conversations.thread(session, session.get(Notebook, notebook_id), principal.user_id, create=True)
        conversations.append(session, thread, role="assistant", author_id=None, text="Old answer [1]",
                             status="answered", citations=[old])
    transcript = world.call("GET", f"/api/notebooks/{notebook_id}/conversation").json
    assert transcript["messages"][-1]["citations"] == [{**old, "title": "Digital Millennium Copyright Act"}]
    with Database(settings.database_path).reader() as session:
        assert session.query(Message).one().citations == [old]
