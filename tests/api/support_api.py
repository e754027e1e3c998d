"""Helpers for the in-process API tests."""
from __future__ import annotations

import hashlib
from datetime import timedelta

from storage import jobs, revisions
from storage.models import Notebook, utcnow
from support.stored_notebooks import EMBEDDER, chunk_rows


def create_notebook(world, resource_ids: list[str], visibility: str = "private") -> str:  # type: ignore[no-untyped-def]
    response = world.call(
        "POST", "/api/notebooks",
        json={"title": "Notebook", "visibility": visibility, "resource_ids": resource_ids},
    )
    assert response.status_code == 201, response.json
    return response.json["id"]


def services_of(world):  # type: ignore[no-untyped-def]
    return world.app.extensions["gnosi"]


def index(world, notebook_id: str) -> str:  # type: ignore[no-untyped-def]
    """Complete the notebook's queued job as the pipeline would: one source (the corpus PDF of
    ``dmca``, extracted, chunked and embedded for real), its bytes kept, the revision activated."""
    svc = services_of(world)
    data = (world.vault.root / "files" / "dmca.pdf").read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    svc.blobs.put_file(world.vault.root / "files" / "dmca.pdf", sha256)
    with svc.db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = jobs.active_job(session, notebook)
        jobs.claim(session, job.id, "test", timedelta(minutes=5))
        draft = revisions.create_draft(session, notebook, job.id)
        job.revision_id = draft.id
        source = revisions.add_source(
            session, draft, resource_id="dmca", field="file", kind="attachment", value="files/dmca.pdf",
            state="available", mime="application/pdf", content_hash=sha256, page_count=18, checked_at=utcnow(),
        )
        revisions.store_chunks(session, source, chunk_rows("dmca.pdf"), embedder=EMBEDDER.name)
        revisions.activate(session, notebook, draft)
        jobs.transition(session, job.id, ("running",), "succeeded", done=1, total=1)
        return draft.id
