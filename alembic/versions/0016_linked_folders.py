"""Folders of external drives linked to notebooks

A notebook may follow folders of a drive (Google Drive, or a directory under the operator's
roots): each file becomes a member ``linked:<document id>`` whose source reads the bytes the last
sync downloaded. Sync rounds are rows too, so "a sync is still running" and "a scheduled round is
running" are answered from this database, never from the broker. Drive authorisations are sealed
with the instance's secret.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _scope() -> list[sa.Column]:
    return [
        sa.Column("vault_hash", sa.String(32), nullable=False, index=True),
        sa.Column("workspace_id", sa.String(32), nullable=False, index=True),
    ]


def upgrade() -> None:
    op.create_table(
        "linked_folders",
        sa.Column("id", sa.String(32), primary_key=True),
        *_scope(),
        sa.Column("notebook_id", sa.String(32), sa.ForeignKey("notebooks.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("connector", sa.String(40), nullable=False),
        sa.Column("folder_id", sa.Text, nullable=False),
        sa.Column("folder_name", sa.String(500), nullable=False),
        sa.Column("schedule_seconds", sa.Integer, nullable=True),
        sa.Column("linked_by", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("next_sync_at", sa.DateTime, nullable=True, index=True),
        sa.Column("last_sync_at", sa.DateTime, nullable=True),
        sa.Column("last_sync_outcome", sa.String(20), nullable=True),
        sa.Column("last_sync_error_code", sa.String(60), nullable=True),
        sa.Column("last_sync_error", sa.String(500), nullable=True),
        sa.UniqueConstraint("notebook_id", "connector", "folder_id"),
    )
    op.create_table(
        "linked_documents",
        sa.Column("id", sa.String(32), primary_key=True),
        *_scope(),
        sa.Column(
            "linked_folder_id", sa.String(32), sa.ForeignKey("linked_folders.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("notebook_id", sa.String(32), sa.ForeignKey("notebooks.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("file_id", sa.Text, nullable=False),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("mime", sa.String(200), nullable=True),
        sa.Column("size", sa.Integer, nullable=True),
        sa.Column("modified_time", sa.DateTime, nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=True, index=True),
        sa.Column("error_code", sa.String(60), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("synced_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("linked_folder_id", "file_id"),
    )
    op.create_table(
        "sync_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        *_scope(),
        sa.Column("owner_id", sa.String(32), nullable=False),
        sa.Column("trigger", sa.String(20), nullable=False),
        sa.Column("connector", sa.String(40), nullable=False),
        sa.Column("folder_ids", sa.JSON, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("counts", sa.JSON, nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("finished_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_sync_runs_owner_state", "sync_runs", ["owner_id", "state"])
    op.create_table(
        "drive_authorizations",
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("vault_hash", sa.String(32), nullable=False, index=True),
        sa.Column("sealed", sa.Text, nullable=False),
        sa.Column("revoked_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("drive_authorizations")
    op.drop_index("ix_sync_runs_owner_state", table_name="sync_runs")
    op.drop_table("sync_runs")
    op.drop_table("linked_documents")
    op.drop_table("linked_folders")
