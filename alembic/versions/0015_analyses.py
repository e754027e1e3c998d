"""Durable hierarchical analyses

An analysis is pinned to one revision of its notebook and computed as map steps over bounded
batches of that revision's chunks, then reduce steps until one part remains (pipeline.analysis).
Each level's parts are planned (what each reads: the chunks of a map step, the parts of a reduce
step) before any runs, and filled in as they finish, so a restarted worker runs only the parts
left and the result's citations resolve through the evidence endpoint like chat's.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analyses",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("vault_hash", sa.String(32), nullable=False, index=True),
        sa.Column("workspace_id", sa.String(32), nullable=False, index=True),
        sa.Column("notebook_id", sa.String(32), sa.ForeignKey("notebooks.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("revision_id", sa.String(32), sa.ForeignKey("revisions.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("requested_by", sa.String(32), nullable=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("instruction", sa.Text, nullable=False, server_default=""),
        sa.Column("source_ids", sa.JSON, nullable=False),
        sa.Column("engine", sa.String(100), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("levels", sa.JSON, nullable=False),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("error_code", sa.String(60), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_expires_at", sa.DateTime, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "analysis_parts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("analysis_id", sa.String(32), sa.ForeignKey("analyses.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("reads", sa.JSON, nullable=False),
        sa.Column("input_items", sa.Integer, nullable=False),
        sa.Column("input_chars", sa.Integer, nullable=False),
        sa.Column("points", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("analysis_id", "level", "ordinal"),
    )


def downgrade() -> None:
    op.drop_table("analysis_parts")
    op.drop_table("analyses")
