"""What a resource is called on screen: its record's title, never its path in the vault.

Citations, the viewer's header and the chat's source choices label a resource with the title of
its record in the notebook's table, else the document's own title, else the file's name (a vault
path such as ``References/tracemonkey.md`` is an identifier, not a label).
"""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from sqlalchemy.orm import Session

from app.extensions import Services
from pipeline.types import PipelineError
from storage import notebooks
from storage.evidence import EvidenceChunk


def record_titles(svc: Services, table_id: str) -> dict[str, str]:
    """Titles of the table's records by resource id (selection metadata only, never evidence)."""
    catalogue = svc.catalogue
    try:
        return {record.resource_id: record.title for record in catalogue.records(catalogue.table(table_id)) if record.title}
    except PipelineError:  # the table is gone or unreadable: fall back to what the sources say
        return {}


def display_title(record_title: str | None, source_title: str | None, value: str | None, resource_id: str) -> str:
    if record_title:
        return record_title
    if source_title:
        return source_title
    if value:
        return PurePosixPath(value).name or value
    return PurePosixPath(resource_id).stem or resource_id


def chunk_title(titles: dict[str, str], chunk: EvidenceChunk) -> str:
    """What to call a chunk's document, given its notebook's ``record_titles``."""
    return display_title(titles.get(chunk.resource_id), chunk.source_title, chunk.source_value, chunk.resource_id)


def titled_citations(svc: Services, session: Session, transcripts: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Citations stored before they carried a ``title`` get one when read (stored messages stay
    as they were written): their record's title, else the record file's name."""
    untitled = {c["notebook_id"] for citations in transcripts for c in citations if "title" not in c}
    tables = notebooks.table_ids(session, untitled)
    titles = {notebook_id: record_titles(svc, table_id) for notebook_id, table_id in tables.items()}

    def titled(citation: dict[str, Any]) -> dict[str, Any]:
        if "title" in citation:
            return citation
        record_title = titles.get(citation["notebook_id"], {}).get(citation["resource_id"])
        return {**citation, "title": display_title(record_title, None, None, citation["resource_id"])}

    return [[titled(c) for c in citations] for citations in transcripts]
