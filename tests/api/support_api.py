"""Helpers for the in-process API tests."""
from __future__ import annotations

import hashlib
import io
from datetime import timedelta
from typing import Any

from pipeline.chunker import ChunkSettings, chunk_segments
from pipeline.extraction_cache import attachment_inputs, encode, extraction_key
from pipeline.extractors import extract
from storage import jobs, revisions
from storage.models import Notebook, utcnow
from support.sse import parse_sse
from support.stored_notebooks import EMBEDDER


def create_notebook(world, resource_ids: list[str], visibility: str = "private") -> str:  # type: ignore[no-untyped-def]
    response = world.call(
        "POST", "/api/notebooks",
        json={"title": "Notebook", "visibility": visibility, "resource_ids": resource_ids},
    )
    assert response.status_code == 201, response.json
    return response.json["id"]


def ask(world: Any, notebook_id: str, message: str) -> dict[str, Any]:
    """One chat turn of alice's over SSE; its ``done`` event's data."""
    response = world.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": message})
    assert response.status_code == 200, response.get_data(as_text=True)
    events = parse_sse(response.get_data(as_text=True))
    assert events[-1][0] == "done", events
    return events[-1][1]


def services_of(world):  # type: ignore[no-untyped-def]
    return world.app.extensions["gnosi"]


def index(world: Any, notebook_id: str, files: dict[str, str] | None = None) -> str:
    """Complete the notebook's queued job as the pipeline would: each resource's PDF (of the
    vault's ``files/``; by default ``dmca`` from dmca.pdf) extracted, its extraction cached under
    its key, chunked and embedded for real, its bytes kept; the revision activated. Its id."""
    files = files or {"dmca": "dmca.pdf"}
    svc = services_of(world)
    limits = svc.settings.extract_limits
    with svc.db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = jobs.active_job(session, notebook)
        jobs.claim(session, job.id, "test", timedelta(minutes=5))
        draft = revisions.create_draft(session, notebook, job.id)
        job.revision_id = draft.id
        for resource_id, name in files.items():
            path = world.vault.root / "files" / name
            data = path.read_bytes()
            sha256 = hashlib.sha256(data).hexdigest()
            svc.blobs.put_file(path, sha256)
            extraction = extract(data, filename=name, mime="application/pdf", limits=limits)
            key = extraction_key(sha256, attachment_inputs(name), limits)
            svc.extractions.write(key, io.BytesIO(encode(extraction)), max_bytes=svc.settings.evidence_max_bytes)
            source = revisions.add_source(
                session, draft, resource_id=resource_id, field="file", kind="attachment", value=f"files/{name}",
                state="available", mime="application/pdf", content_hash=sha256, page_count=extraction.page_count,
                extraction_key=key, checked_at=utcnow(),
            )
            chunks = chunk_segments(extraction.segments, source_fingerprint=sha256, settings=ChunkSettings())
            vectors = EMBEDDER.embed([chunk.text for chunk in chunks])
            revisions.store_chunks(session, source, [
                revisions.ChunkRow(c.chunk_id, c.ordinal, c.text, c.locator, v.tobytes()) for c, v in zip(chunks, vectors)
            ], embedder=EMBEDDER.name)
        revisions.activate(session, notebook, draft)
        jobs.transition(session, job.id, ("running",), "succeeded", done=len(files), total=len(files))
        return draft.id
