"""Notebooks whose active revision holds real corpus PDFs, extracted, chunked and embedded as the
pipeline does and stored through ``revisions.store_chunks`` (the FTS5 trigger indexes them), built
straight in a migrated database: for storage tests that need real rows, not a running instance."""
from __future__ import annotations

from sqlalchemy.orm import Session

from pipeline.chunker import ChunkSettings, chunk_segments
from pipeline.embedder import HashingEmbedder
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.pdf import PdfExtractor
from pipeline.planning import PlannedSource
from pipeline.types import SourceRef
from storage import accounts, ingestion, notebooks, revisions
from storage.db import Database
from storage.models import Job, Notebook
from support.services import CORPUS

VAULT = "v"
EMBEDDER = HashingEmbedder()


def chunk_rows(name: str) -> list[revisions.ChunkRow]:
    data = (CORPUS / "pdf" / name).read_bytes()
    extraction = PdfExtractor().extract(data, filename=name, mime="application/pdf", limits=ExtractLimits())
    chunks = chunk_segments(extraction.segments, source_fingerprint=name, settings=ChunkSettings())
    vectors = EMBEDDER.embed([chunk.text for chunk in chunks])
    return [revisions.ChunkRow(c.chunk_id, c.ordinal, c.text, c.locator, v.tobytes()) for c, v in zip(chunks, vectors)]


def stored_notebook(
    db: Database, user: str, documents: tuple[str, ...], contents: dict[str, list[revisions.ChunkRow]] | None = None
) -> str:
    """A notebook of ``user`` whose active revision holds ``documents``, one source each: the
    corpus PDF of that name, or the rows ``contents`` gives for it; its id."""
    with db.session() as session:
        principal = accounts.principal_for_token(session, VAULT, accounts.add_user(session, VAULT, user, "lab", "editor")[1])
        assert principal is not None
        notebook = notebooks.create(session, principal, title=user, visibility="private", conversation_mode="shared",
                                    table_id="t", resource_ids=list(documents))
        job = Job(vault_hash=VAULT, workspace_id=notebook.workspace_id, notebook_id=notebook.id, kind="ingest", params={})
        session.add(job)
        session.flush()
        revision = revisions.create_draft(session, notebook, job.id)
        for name in documents:
            source = revisions.add_source(session, revision, resource_id=name, field="file", kind="attachment",
                                          value=f"files/{name}", state="available", title=name)
            rows = contents[name] if contents else chunk_rows(name)
            revisions.store_chunks(session, source, rows, embedder=EMBEDDER.name)
        revisions.activate(session, notebook, revision)
        return notebook.id


def refresh_changing_nothing(db: Database, notebook_id: str) -> str:
    """A new active revision whose every source is carried from the active one (it serves the same
    source versions); its id."""
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = Job(vault_hash=VAULT, workspace_id=notebook.workspace_id, notebook_id=notebook.id, kind="ingest", params={})
        session.add(job)
        session.flush()
        draft = revisions.create_draft(session, notebook, job.id)
        for old in revisions.sources(session, notebook.active_revision_id):
            revisions.carry_source(session, old, draft, state="available", resource_title=old.resource_title)
        revisions.activate(session, notebook, draft)
        return draft.id


def start_refresh(session: Session, notebook: Notebook, changed: dict[str, str], titles: dict[str, str]) -> Job:
    """The draft of a refresh that extracts the resources of ``changed`` again and carries the rest."""
    job = Job(vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id,
              kind="ingest", params={}, state="running")
    session.add(job)
    session.flush()
    plans = [
        PlannedSource(SourceRef(resource_id, field, "attachment", value),
                      "extract" if resource_id in changed else "reuse",
                      changed.get(resource_id, previous.fingerprint), previous,
                      resource_title=titles.get(resource_id, previous.resource_title))
        for (resource_id, field, value), previous in sorted(ingestion.previous_sources(session, notebook).items())
    ]
    ingestion.start_revision(session, job, notebook, plans)
    return job


def refresh(
    db: Database,
    notebook_id: str,
    changed: dict[str, str] | None = None,
    *,
    titles: dict[str, str] | None = None,
    keep: tuple[int, int] = (3, 20),
) -> str:
    """A whole refresh: the resources of ``changed`` get new content (another corpus PDF, stored
    as the index step stores it); returns its revision's id."""
    changed = changed or {}
    with db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = start_refresh(session, notebook, changed, titles or {})
        for source in revisions.sources(session, job.revision_id):
            if source.resource_id in changed:
                revisions.store_chunks(session, source, chunk_rows(changed[source.resource_id]), embedder=EMBEDDER.name)
                source.state = "available"
        ingestion.finish_if_complete(session, job, notebook, keep)
        return job.revision_id
