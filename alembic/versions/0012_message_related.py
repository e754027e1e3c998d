"""Related sources of a refused answer

When the sources do not answer a question, the answer lists the closest passages it found
("related, but they do not answer this"), so a reader sees what the notebook does hold nearby
instead of a bare refusal. They are kept with the message, like its citations, so a transcript
read later shows what the reader saw. Existing messages get an empty list.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("related", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("related")
