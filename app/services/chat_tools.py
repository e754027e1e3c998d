"""The read-only tools of one chat turn, closed over its authorised, pinned contexts.

Every chunk a tool returns is remembered with the notebook it came from, so a citation can be
mapped back to a full, server-validated link (notebook, resource, revision, source, locator).
"""
from __future__ import annotations

from typing import Any

from app.citation_urls import passage_link
from app.extensions import Services
from app.services.chat_analyses import ChatAnalyses
from app.services.chat_knowledge import ChatKnowledge
from app.services.chat_request import READY_STATES, PinnedContext
from app.services.titles import chunk_title, record_titles
from pipeline.answering.knowledge_tools import knowledge_tools
from pipeline.answering.tools import analysis_tools, notebook_tools
from pipeline.answering.types import EvidenceItem, ToolRegistry
from pipeline.extractors.reference_lists import REFERENCES
from storage import evidence, retrieval, revisions
from storage.evidence import EvidenceChunk
from storage.scope import Principal

FILTERED_SEARCH_DEPTH = retrieval.MAX_RESULTS
# Passages listed under a refusal as related: enough to show where the notebook comes closest.
MAX_RELATED = 3


class TurnTools:
    """``knowledge``: the turn also gets the knowledge tools (a knowledge-mode turn); a plain
    notebook turn has no tool that writes anything but an analysis request."""

    def __init__(self, svc: Services, principal: Principal, contexts: list[PinnedContext], *, knowledge: bool = False) -> None:
        self.svc = svc
        self.contexts = contexts
        self.found: dict[str, tuple[str, EvidenceChunk]] = {}
        self.registry: ToolRegistry = notebook_tools(search=self.search, read=self.read, inspect=self.inspect)
        analyses = ChatAnalyses(svc, principal, contexts, self._item, self._allowed)
        specs = analysis_tools(start=analyses.start, inspect=analyses.inspect, read=analyses.read)
        self.knowledge = ChatKnowledge(svc, principal, contexts[0]) if knowledge else None
        if self.knowledge is not None:
            specs += knowledge_tools(search=self.knowledge.search, read_note=self.knowledge.read_note,
                                     propose_edit=self.knowledge.propose_edit)
        for spec in specs:
            self.registry.register(spec)
        self._titles: dict[str, dict[str, str]] = {}
        self._approvals_shown = 0

    def new_approvals(self) -> list[dict[str, Any]]:
        """The approvals the knowledge tools asked for since the last call (once each)."""
        if self.knowledge is None:
            return []
        fresh = self.knowledge.approvals[self._approvals_shown:]
        self._approvals_shown = len(self.knowledge.approvals)
        return fresh

    @property
    def approvals(self) -> list[dict[str, Any]]:
        return self.knowledge.approvals if self.knowledge is not None else []

    def _record_titles(self, notebook_id: str) -> dict[str, str]:
        """The record titles of a context notebook's table, read once per turn."""
        if notebook_id not in self._titles:
            table_id = next(c.notebook.table_id for c in self.contexts if c.notebook.id == notebook_id)
            self._titles[notebook_id] = record_titles(self.svc, table_id)
        return self._titles[notebook_id]

    def _item(self, context: PinnedContext, chunk: EvidenceChunk, score: float) -> EvidenceItem:
        self.found[chunk.chunk_id] = (context.notebook.id, chunk)
        return EvidenceItem(
            chunk_id=chunk.chunk_id,
            revision_id=chunk.revision_id,
            resource_id=chunk.resource_id,
            source_id=chunk.source_id,
            text=chunk.text,
            locator=chunk.locator,
            score=score,
            title=chunk.source_title,
            names=chunk.names,
        )

    @staticmethod
    def _allowed(context: PinnedContext, chunk: EvidenceChunk) -> bool:
        return context.source_ids is None or chunk.source_id in context.source_ids

    def search(self, query: str, limit: int) -> list[EvidenceItem]:
        scored: list[tuple[float, PinnedContext, EvidenceChunk]] = []
        with self.svc.db.reader() as session:
            for context in self.contexts:
                depth = limit if context.source_ids is None else FILTERED_SEARCH_DEPTH
                hits = self.svc.retriever.search(
                    session, context.notebook, context.revision.id, query, limit=depth
                )
                scored.extend((hit.score, context, hit.chunk) for hit in hits if self._allowed(context, hit.chunk))
        scored.sort(key=lambda entry: (-entry[0], entry[2].chunk_id))
        return [self._item(context, chunk, score) for score, context, chunk in scored[:limit]]

    def read(self, chunk_id: str) -> EvidenceItem | None:
        with self.svc.db.reader() as session:
            for context in self.contexts:
                chunk = evidence.chunk_in_revision(session, context.notebook, context.revision.id, chunk_id)
                if chunk is not None and self._allowed(context, chunk):
                    return self._item(context, chunk, 0.0)
        return None

    def inspect(self) -> list[dict[str, Any]]:
        listed = []
        with self.svc.db.reader() as session:
            for context in self.contexts:
                for source in revisions.sources(session, context.revision.id):
                    if source.state in READY_STATES and (context.source_ids is None or source.id in context.source_ids):
                        listed.append(
                            {
                                "notebook_id": context.notebook.id,
                                "resource_id": source.resource_id,
                                "source_id": source.id,
                                "kind": source.kind,
                                "title": source.title,
                                "state": source.state,
                                "pages": source.page_count,
                            }
                        )
        return listed

    def citation(self, chunk_id: str, quote: str) -> dict[str, Any] | None:
        """A full citation for an id some tool returned this turn; None for an invented id."""
        if self.registry.seen(chunk_id) is None:
            return None
        if chunk_id in self.found:
            return {**self._link(*self.found[chunk_id]), "quote": quote}
        knowledge_link = self.knowledge.link(chunk_id) if self.knowledge is not None else None
        return {**knowledge_link, "quote": quote} if knowledge_link is not None else None

    def related(self, limit: int = MAX_RELATED) -> list[dict[str, Any]]:
        """The closest passages the tools found this turn, for an answer that refuses: the best
        one of each document, in the order they were found (best first), never a reference list's
        (a bibliography line is not where an answer would be)."""
        passages: dict[tuple[str, str], dict[str, Any]] = {}
        for notebook_id, chunk in self.found.values():
            document = (notebook_id, chunk.resource_id)
            if document not in passages and chunk.locator.get("section") != REFERENCES:
                passages[document] = self._link(notebook_id, chunk)
        return list(passages.values())[:limit]

    def _link(self, notebook_id: str, chunk: EvidenceChunk) -> dict[str, Any]:
        return passage_link(notebook_id, chunk, chunk_title(self._record_titles(notebook_id), chunk))
