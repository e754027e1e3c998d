"""The knowledge layer: sources and their versions, notes, source notes, concepts, trees, events

Identities keep an active-version pointer; versions never change once written. A source version's
pages, blocks and figures are what its parse stage found; its job's stage outputs are kept as they
are produced, so a restart resumes where it stopped. Notes are searched through their own
full-text table (one row per published note version).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

TOKENIZER = "porter unicode61 remove_diacritics 2"


def _scope() -> list[sa.Column]:
    return [
        sa.Column("vault_hash", sa.String(32), nullable=False, index=True),
        sa.Column("workspace_id", sa.String(32), nullable=False, index=True),
    ]


def _id() -> sa.Column:
    return sa.Column("id", sa.String(32), primary_key=True)


def _notebook() -> sa.Column:
    return sa.Column("notebook_id", sa.String(32), sa.ForeignKey("notebooks.id", ondelete="CASCADE"), nullable=False, index=True)


def _parent(name: str, table: str, *, primary: bool = False, index: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(32), sa.ForeignKey(f"{table}.id", ondelete="CASCADE"), nullable=False,
                     primary_key=primary, index=index)


def _created() -> sa.Column:
    return sa.Column("created_at", sa.DateTime, nullable=False)


def upgrade() -> None:
    op.create_table(
        "knowledge_sources", _id(), *_scope(), _notebook(),
        sa.Column("resource_id", sa.String(500), nullable=False),
        sa.Column("label", sa.String(500), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("active_version_id", sa.String(32), nullable=True),
        _created(),
        sa.Column("deleted_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "knowledge_source_versions", _id(), *_scope(),
        _parent("source_id", "knowledge_sources", index=True), _notebook(),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("extraction_key", sa.String(64), nullable=False),
        sa.Column("origin", sa.JSON, nullable=False),
        sa.Column("label", sa.String(500), nullable=False),
        sa.Column("page_count", sa.Integer, nullable=True),
        _created(),
        sa.UniqueConstraint("source_id", "number"),
    )
    op.create_index("ix_knowledge_source_versions_hash", "knowledge_source_versions", ["notebook_id", "content_hash"])
    op.create_table(
        "knowledge_pages", _parent("source_version_id", "knowledge_source_versions", primary=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("label", sa.String(40), nullable=True),
    )
    op.create_table(
        "knowledge_blocks", _parent("source_version_id", "knowledge_source_versions", primary=True),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("box", sa.JSON, nullable=True),
    )
    op.create_table(
        "knowledge_assets", _parent("source_version_id", "knowledge_source_versions", primary=True),
        sa.Column("key", sa.String(40), primary_key=True),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("caption", sa.Text, nullable=False),
        sa.Column("box", sa.JSON, nullable=True),
    )
    op.create_table(
        "knowledge_jobs", _id(), *_scope(), _notebook(),
        _parent("source_version_id", "knowledge_source_versions", index=True),
        sa.Column("engine", sa.String(100), nullable=False),
        sa.Column("state", sa.String(30), nullable=False),
        sa.Column("stage", sa.String(20), nullable=False),
        sa.Column("requested_by", sa.String(32), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_expires_at", sa.DateTime, nullable=True),
        sa.Column("warnings", sa.JSON, nullable=False),
        sa.Column("error_code", sa.String(60), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        _created(),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_knowledge_jobs_state", "knowledge_jobs", ["state", "lease_expires_at"])
    op.create_table(
        "knowledge_stage_outputs", _parent("job_id", "knowledge_jobs", primary=True),
        sa.Column("stage", sa.String(20), primary_key=True),
        sa.Column("part", sa.String(40), primary_key=True),
        sa.Column("output", sa.JSON, nullable=False),
        _created(),
    )
    op.create_table(
        "knowledge_notes", _id(), *_scope(), _notebook(),
        _parent("source_version_id", "knowledge_source_versions"),
        sa.Column("plan_key", sa.String(40), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("active_version_id", sa.String(32), nullable=True),
        _created(),
        sa.UniqueConstraint("source_version_id", "plan_key"),
    )
    op.create_table(
        "knowledge_note_versions", _id(), _parent("note_id", "knowledge_notes", index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("blocks", sa.JSON, nullable=False),
        sa.Column("claims", sa.JSON, nullable=False),
        sa.Column("evidence", sa.JSON, nullable=False),
        sa.Column("images", sa.JSON, nullable=False),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=True),
        _created(),
        sa.UniqueConstraint("note_id", "number"),
    )
    op.create_table(
        "knowledge_source_notes", _id(), *_scope(), _notebook(),
        sa.Column("source_version_id", sa.String(32), sa.ForeignKey("knowledge_source_versions.id", ondelete="CASCADE"),
                  nullable=False, unique=True),
        sa.Column("active_version_id", sa.String(32), nullable=True),
    )
    op.create_table(
        "knowledge_source_note_versions", _id(), _parent("source_note_id", "knowledge_source_notes", index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("toc", sa.JSON, nullable=False),
        sa.Column("job_id", sa.String(32), nullable=True),
        _created(),
        sa.UniqueConstraint("source_note_id", "number"),
    )
    op.create_table(
        "knowledge_concepts", _id(), *_scope(), _notebook(),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("normalized_name", sa.String(300), nullable=False),
        sa.Column("aliases", sa.JSON, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("active_version_id", sa.String(32), nullable=True),
        _created(),
    )
    op.create_index("ix_knowledge_concepts_name", "knowledge_concepts", ["notebook_id", "normalized_name"])
    op.create_table(
        "knowledge_concept_versions", _id(), _parent("concept_id", "knowledge_concepts", index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("module_version_ids", sa.JSON, nullable=False),
        sa.Column("event_id", sa.String(32), nullable=True),
        _created(),
        sa.UniqueConstraint("concept_id", "number"),
    )
    op.create_table(
        "knowledge_modules", _id(), _parent("concept_id", "knowledge_concepts", index=True),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("active_version_id", sa.String(32), nullable=True),
        _created(),
        sa.UniqueConstraint("concept_id", "key"),
    )
    op.create_table(
        "knowledge_module_versions", _id(), _parent("module_id", "knowledge_modules", index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("inputs_key", sa.String(64), nullable=False),
        sa.Column("contribution_ids", sa.JSON, nullable=False),
        _created(),
        sa.UniqueConstraint("module_id", "number"),
    )
    op.create_index("ix_knowledge_module_versions_inputs", "knowledge_module_versions", ["module_id", "inputs_key"])
    op.create_table(
        "knowledge_contributions", _id(), *_scope(), _notebook(),
        _parent("concept_id", "knowledge_concepts", index=True),
        _parent("module_id", "knowledge_modules", index=True),
        _parent("note_id", "knowledge_notes", index=True),
        sa.Column("note_version_id", sa.String(32), nullable=False),
        sa.Column("source_version_id", sa.String(32), nullable=False, index=True),
        sa.Column("block_keys", sa.JSON, nullable=False),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        _created(),
        sa.Column("invalidated_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "knowledge_trees", _id(), *_scope(), _notebook(),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("active_version_id", sa.String(32), nullable=True),
        _created(),
    )
    op.create_table(
        "knowledge_tree_versions", _id(), _parent("tree_id", "knowledge_trees", index=True),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("nodes", sa.JSON, nullable=False),
        _created(),
        sa.UniqueConstraint("tree_id", "number"),
    )
    op.create_table(
        "knowledge_events", _id(), *_scope(), _notebook(),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("subject", sa.JSON, nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_expires_at", sa.DateTime, nullable=True),
        sa.Column("heartbeat_at", sa.DateTime, nullable=True),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        _created(),
        sa.Column("finished_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_knowledge_events_state", "knowledge_events", ["state", "lease_expires_at"])
    op.create_table(
        "knowledge_approvals", sa.Column("id", sa.String(64), primary_key=True), *_scope(), _notebook(),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        _created(),
        sa.Column("expires_at", sa.DateTime, nullable=False),
        sa.Column("used_at", sa.DateTime, nullable=True),
    )
    # One row per published note version (the active ones: a new version replaces its note's row).
    op.execute(
        "CREATE VIRTUAL TABLE knowledge_notes_fts USING fts5(title, summary, body, "
        "note_version_id UNINDEXED, note_id UNINDEXED, notebook_id UNINDEXED, source_version_id UNINDEXED, "
        f"tokenize='{TOKENIZER}')"
    )


def downgrade() -> None:
    op.execute("DROP TABLE knowledge_notes_fts")
    for table in (
        "knowledge_approvals", "knowledge_events", "knowledge_tree_versions", "knowledge_trees",
        "knowledge_contributions", "knowledge_module_versions", "knowledge_modules", "knowledge_concept_versions",
        "knowledge_concepts", "knowledge_source_note_versions", "knowledge_source_notes", "knowledge_note_versions",
        "knowledge_notes", "knowledge_stage_outputs", "knowledge_jobs", "knowledge_assets", "knowledge_blocks",
        "knowledge_pages", "knowledge_source_versions", "knowledge_sources",
    ):
        op.drop_table(table)
