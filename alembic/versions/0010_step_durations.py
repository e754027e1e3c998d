"""Step durations: how long each ingestion step took, as histogram buckets

Steps run in several processes and on several hosts (extract workers have no database), and
several web processes may answer ``GET /metrics``: the one place all of them agree on is this
database. Each row counts the step's runs whose duration fell in one bucket, and their total
seconds; ``GET /metrics`` sums them into a Prometheus histogram. Kept across restarts, so the
counters never go back.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "step_durations",
        sa.Column("step", sa.String(length=40), primary_key=True),
        sa.Column("bucket", sa.Integer(), primary_key=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("step_durations")
