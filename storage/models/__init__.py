"""The relational schema, one module per area; importing this package registers every table on
``Base.metadata``. Alembic migrations create it; nothing here creates tables.

Every row carries ``vault_hash`` and ``workspace_id`` so that a query can always be scoped by both
(users are the exception: one account may belong to several workspaces of a vault; memberships and
tokens carry the workspace).
"""
from __future__ import annotations

from storage.models.base import utcnow, new_id, Base, Scoped, in_notebook
from storage.models.accounts import Workspace, User, Membership, ApiToken, SignInSession, RateLimit, SignInFailure
from storage.models.notebooks import Notebook, NotebookAcl, NotebookResource, Revision, Source, Chunk, ChunkVector, Job, AuditOutcome
from storage.models.conversations import ConversationThread, Message, RevisionPin
from storage.models.analyses import Analysis, AnalysisPart
from storage.models.knowledge import (
    KnowledgeApproval, KnowledgeAsset, KnowledgeBlock, KnowledgeConcept, KnowledgeConceptVersion, KnowledgeContribution, KnowledgeEvent, KnowledgeJob, KnowledgeModule, KnowledgeModuleVersion, KnowledgeNote, KnowledgeNoteVersion, KnowledgePage, KnowledgeSource, KnowledgeSourceNote, KnowledgeSourceNoteVersion, KnowledgeSourceVersion, KnowledgeStageOutput, KnowledgeTree, KnowledgeTreeVersion,
)
from storage.models.linked import DriveAuthorization, LinkedDocument, LinkedFolder, SyncRun
from storage.models.operations import Heartbeat, StepDuration

__all__ = ["Analysis", "AnalysisPart", "ApiToken", "AuditOutcome", "Base", "Chunk", "ChunkVector", "ConversationThread", "DriveAuthorization", "Heartbeat", "Job", "KnowledgeApproval", "KnowledgeAsset", "KnowledgeBlock", "KnowledgeConcept", "KnowledgeConceptVersion", "KnowledgeContribution", "KnowledgeEvent", "KnowledgeJob", "KnowledgeModule", "KnowledgeModuleVersion", "KnowledgeNote", "KnowledgeNoteVersion", "KnowledgePage", "KnowledgeSource", "KnowledgeSourceNote", "KnowledgeSourceNoteVersion", "KnowledgeSourceVersion", "KnowledgeStageOutput", "KnowledgeTree", "KnowledgeTreeVersion", "LinkedDocument", "LinkedFolder", "Membership", "Message", "Notebook", "NotebookAcl", "NotebookResource", "RateLimit", "Revision", "RevisionPin", "Scoped", "SignInFailure", "SignInSession", "Source", "StepDuration", "SyncRun", "User", "Workspace", "in_notebook", "new_id", "utcnow"]
