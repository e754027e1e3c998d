"""Heartbeats: when a role last proved it was alive

The job sweeper runs on a coordinator worker every GNOSI_SWEEP_INTERVAL_SECONDS, sent by beat
through the broker: its row says that beat, the broker and a coordinator worker all worked at
that time. ``GET /readyz`` reads it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "heartbeats",
        sa.Column("name", sa.String(length=100), primary_key=True),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("heartbeats")
