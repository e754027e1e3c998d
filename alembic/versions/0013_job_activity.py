"""What a job's worker is doing now

A scanned book takes minutes to read by OCR; the progress a reader sees said only which
resource was being indexed. Workers now report what they are doing on it ("OCR: page 12 of
40"), kept on the job until the source's result is recorded.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("activity", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("activity")
