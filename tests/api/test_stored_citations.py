"""Citations stored by earlier versions are read in today's shape, and the stored message stays as
it was written: a title (their record's), the gnosi-cite link, and an ``open_url`` that leads to
the passage (legacy attachment links pointed at the JSON evidence API, web links lacked the
section's fragment). No reindexing: every citation already names its notebook, revision and chunk."""
from __future__ import annotations

from typing import Any

from storage import accounts, conversations
from storage.db import Database
from storage.models import Message, Notebook
from support_api import create_notebook


def _store(world, notebook_id: str, citations: list[dict[str, Any]]) -> Database:  # type: ignore[no-untyped-def]
    settings = world.app.extensions["gnosi"].settings
    database = Database(settings.database_path)
    with database.session() as session:
        principal = accounts.principal_for_token(session, settings.vault_hash, world.tokens["alice"])
        assert principal is not None
        thread = conversations.thread(session, session.get(Notebook, notebook_id), principal.user_id, create=True)
        conversations.append(session, thread, role="assistant", author_id=None, text="Old answer [1]",
                             status="answered", citations=citations)
    return database


def test_a_citation_stored_without_a_title_or_links_is_read_with_them(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    old = {"notebook_id": notebook_id, "resource_id": "dmca", "revision_id": "r", "source_id": "s",
           "chunk_id": "c", "locator": {"page": 1}, "quote": "q"}
    database = _store(world, notebook_id, [old])
    transcript = world.call("GET", f"/api/notebooks/{notebook_id}/conversation").json
    assert transcript["messages"][-1]["citations"] == [{
        **old, "title": "Digital Millennium Copyright Act", "cite": f"gnosi-cite://{notebook_id}/r/c",
        "open_url": f"/notebooks/{notebook_id}/evidence/c?revision=r",
    }]
    with database.reader() as session:
        assert session.query(Message).one().citations == [old]


def test_legacy_links_are_upgraded_when_read(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    base = {"notebook_id": notebook_id, "resource_id": "dmca", "revision_id": "r", "source_id": "s", "quote": "q",
            "title": "A title"}
    attachment = {**base, "chunk_id": "c1", "locator": {"page": 3},
                  "open_url": f"/api/notebooks/{notebook_id}/evidence/c1?revision=r#page=3"}
    web = {**base, "chunk_id": "c2", "locator": {"url": "https://example.org/wiki", "fragment": "History"},
           "open_url": "https://example.org/wiki"}
    current = {**base, "chunk_id": "c3", "locator": {"page": 1},
               "open_url": f"/notebooks/{notebook_id}/evidence/c3?revision=r", "cite": f"gnosi-cite://{notebook_id}/r/c3"}
    _store(world, notebook_id, [attachment, web, current])
    read = world.call("GET", f"/api/notebooks/{notebook_id}/conversation").json["messages"][-1]["citations"]
    assert [c["open_url"] for c in read] == [
        f"/notebooks/{notebook_id}/evidence/c1?revision=r",  # the dashboard's page, not the JSON API
        "https://example.org/wiki#History",  # the original page, at the cited section
        f"/notebooks/{notebook_id}/evidence/c3?revision=r",
    ]
    assert [c["cite"] for c in read] == [f"gnosi-cite://{notebook_id}/r/{chunk}" for chunk in ("c1", "c2", "c3")]
