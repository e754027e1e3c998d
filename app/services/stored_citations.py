"""Citations as any earlier version stored them, read in today's shape.

Stored messages stay as they were written; what a reader gets is upgraded on the way out: a
title (app.services.titles), the gnosi-cite link (pipeline.citation_links), and an ``open_url``
that leads a person to the passage: legacy attachment links pointed at the JSON evidence API
(or were missing), and web links lacked the section's fragment. Nothing is reindexed: every
citation already names its notebook, pinned revision and chunk.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.citation_urls import evidence_page_url, web_evidence_url
from app.extensions import Services
from app.services.titles import titled_citations
from pipeline.citation_links import CiteTarget, is_legacy_evidence_link


def readable_citations(
    svc: Services, session: Session, transcripts: list[list[dict[str, Any]]]
) -> list[list[dict[str, Any]]]:
    return [[_linked(c) for c in citations] for citations in titled_citations(svc, session, transcripts)]


def _linked(citation: dict[str, Any]) -> dict[str, Any]:
    target = CiteTarget(citation["notebook_id"], citation["revision_id"], citation["chunk_id"])
    locator = citation.get("locator") or {}
    if locator.get("url"):  # web evidence: the original validated URL, at its section
        open_url = citation.get("open_url") or locator["url"]
        if locator.get("fragment") and "#" not in open_url:
            open_url = web_evidence_url(open_url, locator["fragment"])
    elif citation.get("open_url") and not is_legacy_evidence_link(citation["open_url"]):
        open_url = citation["open_url"]
    else:
        open_url = evidence_page_url(target)
    return {**citation, "cite": target.link, "open_url": open_url}
