"""Indexes that let the sweeper find lost jobs and analyses without reading every row

The sweeper asks every minute which jobs and analyses are queued since a while or running on an
expired lease. Without an index leading with ``state`` that read scans the whole table, finished
rows and all (``bench/sweep_scan.py``). The knowledge layer's two work tables have had such an
index since 0017.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_state", "jobs", ["state", "lease_expires_at"])
    op.create_index("ix_analyses_state", "analyses", ["state", "lease_expires_at"])


def downgrade() -> None:
    op.drop_index("ix_analyses_state", "analyses")
    op.drop_index("ix_jobs_state", "jobs")
