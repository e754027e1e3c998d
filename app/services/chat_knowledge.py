"""The knowledge tools of a knowledge-mode chat turn, through the API's own rules and code.

Searching runs ``knowledge_answers.search`` and reading a note reads what ``GET …/notes/{id}``
shows; every document passage they return becomes evidence of this turn, citeable like a chunk,
under an id of its own (``ch_kb<source version>-<block>``): a citation of it opens the source's file
at the page, as the Knowledge panel's citations do. Proposing an edit checks it as the edit itself
would (``knowledge_edits.planned_edit``: a stale version, a missing block, a changed source are
refused with the API's code, the same text is ``UNCHANGED``) and then only asks for the person's
one-time approval (``knowledge_approvals``); the turn shows them each approval it asked for.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.extensions import Services
from app.services import knowledge_access, knowledge_answers, knowledge_approvals, knowledge_edits
from app.services.chat_analyses import as_tool_error
from app.services.chat_request import PinnedContext
from app.services.knowledge_view import file_url, page_locator
from pipeline.answering.types import EvidenceItem
from pipeline.knowledge.ask import Passage
from pipeline.types import PipelineError
from storage.knowledge import notes
from storage.models import KnowledgeNoteVersion, KnowledgeSource, KnowledgeSourceVersion, Notebook
from storage.scope import Principal

# Passages shown per hit and per claim: enough to cite it, bounded so a read stays a few pages.
MAX_HIT_PASSAGES = 3
MAX_CLAIM_PASSAGES = 2
MAX_NOTE_BLOCKS = 60


def passage_id(passage: Passage) -> str:
    """A citeable id of a document block, in the shape chat citations take (``ch_…``)."""
    return f"ch_kb{passage.source_version_id}-{passage.block_ordinal}"


class ChatKnowledge:
    def __init__(self, svc: Services, principal: Principal, page: PinnedContext) -> None:
        self.svc = svc
        self.principal = principal
        self.notebook_id = page.notebook.id
        self.links: dict[str, dict[str, Any]] = {}
        self.approvals: list[dict[str, Any]] = []

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        with as_tool_error(), self.svc.db.reader() as session:
            hits = knowledge_answers.search(session, self._notebook(session), query, scope=None, limit=limit)
            items = self._items(session, [p for hit in hits for p in hit.passages[:MAX_HIT_PASSAGES]])
            return [{"kind": hit.kind, "id": hit.id, "version_id": hit.version_id, "title": hit.title,
                     "passages": [items[passage_id(p)] for p in hit.passages[:MAX_HIT_PASSAGES]]} for hit in hits]

    def read_note(self, note_id: str) -> dict[str, Any]:
        with as_tool_error(), self.svc.db.reader() as session:
            note = notes.get(session, self._notebook(session), note_id)
            if note is None:
                raise PipelineError("NOTE_NOT_FOUND", "No such note in this notebook.")
            version = session.get(KnowledgeNoteVersion, note.active_version_id)
            refs = {claim["key"]: [(note.source_version_id, e["block_ordinal"]) for e in version.evidence
                                   if e["claim_key"] == claim["key"]][:MAX_CLAIM_PASSAGES] for claim in version.claims}
            passages = {(p.source_version_id, p.block_ordinal): p
                        for p in knowledge_answers.passages(session, [ref for listed in refs.values() for ref in listed])}
            items = self._items(session, passages.values())
            return {
                "note_id": note.id, "state": note.state, "version_id": version.id, "title": version.title,
                "summary": version.summary,
                "blocks": [{"block_key": b["key"], "kind": b.get("kind"), "text": b["text"],
                            "human_revised": bool(b.get("human_revised"))} for b in version.blocks[:MAX_NOTE_BLOCKS]],
                "claims": [{"text": claim["text"], "block_key": claim["block_key"],
                            "evidence": [items[passage_id(passages[ref])] for ref in refs[claim["key"]] if ref in passages]}
                           for claim in version.claims],
            }

    def propose_edit(self, note_id: str, expected_version_id: str, block_key: str, text: str) -> dict[str, Any]:
        params = {"note_id": note_id, "expected_version_id": expected_version_id, "block_key": block_key, "text": text}
        with as_tool_error(), self.svc.db.session() as session:
            knowledge_access.writer(self.principal)
            notebook = self._notebook(session)
            note, current, revised = knowledge_edits.planned_edit(session, notebook, note_id, expected_version_id=expected_version_id,
                                                                  block_key=block_key, text=text)
            if revised is None:
                return {"status": knowledge_edits.UNCHANGED, "note_id": note.id, "version_id": current.id}
            approval = knowledge_approvals.request(session, notebook, self.principal, knowledge_approvals.EDIT_BLOCK, params)
            shown = knowledge_approvals.shown(session, notebook, [approval])[0]
        self.approvals.append(shown)
        return {"status": "awaiting_approval", "approval_id": shown["id"], "expires_at": shown["expires_at"],
                "note_id": note_id, "block_key": block_key}

    def link(self, chunk_id: str) -> dict[str, Any] | None:
        """Where a cited passage of this turn is and how to open it (``passage_link``'s shape, with
        the evidence the viewer shows inline)."""
        return self.links.get(chunk_id)

    def _notebook(self, session: Session) -> Notebook:
        return session.get(Notebook, self.notebook_id)

    def _items(self, session: Session, passages: Iterable[Passage]) -> dict[str, EvidenceItem]:
        """Each passage as evidence of this turn, remembering where its citation leads."""
        passages = list(passages)
        versions = {v.id: v for v in session.scalars(select(KnowledgeSourceVersion).where(
            KnowledgeSourceVersion.id.in_({p.source_version_id for p in passages})))}
        resources = {s.id: s.resource_id for s in session.scalars(select(KnowledgeSource).where(
            KnowledgeSource.id.in_({v.source_id for v in versions.values()})))}
        items = {}
        for passage in passages:
            version = versions[passage.source_version_id]
            locator = page_locator(passage.page, passage.page_label)
            origin, chunk_id = version.origin, passage_id(passage)
            item = EvidenceItem(chunk_id=chunk_id, revision_id=origin["revision_id"], resource_id=resources[version.source_id],
                                source_id=origin["source_id"], text=passage.text, locator=locator, title=version.label)
            self.links[chunk_id] = {
                "notebook_id": self.notebook_id, "resource_id": item.resource_id, "title": version.label,
                "revision_id": item.revision_id, "source_id": item.source_id, "chunk_id": chunk_id, "locator": locator,
                "open_url": file_url(self.notebook_id, version, passage.page),
                "knowledge": {"source_version_id": version.id, "block_ordinal": passage.block_ordinal},
                "evidence": {"locator": locator, "text": passage.text, "source_id": item.source_id,
                             "revision_id": item.revision_id},
            }
            items[chunk_id] = item
        return items

