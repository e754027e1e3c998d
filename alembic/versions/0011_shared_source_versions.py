"""Revisions share the chunks of sources that did not change

A refresh used to copy every unchanged source's chunks, FTS rows and vectors into the new
revision (27-33 s per refresh of a 100k-chunk notebook, and a full copy per kept revision). A
source now names the source version whose chunks it serves, ``(chunks_revision_id,
chunks_source_id)``: itself when its chunks were stored for it, or the source of an earlier
revision whose chunks it shares. Existing rows all hold their own chunks, so they point at
themselves; nothing else moves. docs/decisions/0011 has the design and the measurements.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sources", sa.Column("chunks_revision_id", sa.String(length=32), nullable=True))
    op.add_column("sources", sa.Column("chunks_source_id", sa.String(length=32), nullable=True))
    op.execute("UPDATE sources SET chunks_revision_id = revision_id, chunks_source_id = id")
    op.create_index("ix_sources_revision_chunks", "sources", ["revision_id", "chunks_source_id"])


def downgrade() -> None:
    """Only where no source shares another's chunks: those would be left without any."""
    shared = op.get_bind().scalar(sa.text("SELECT count(*) FROM sources WHERE chunks_source_id != id"))
    if shared:
        raise RuntimeError(f"{shared} sources share chunks stored for other revisions; restore a backup instead")
    op.drop_index("ix_sources_revision_chunks", table_name="sources")
    op.drop_column("sources", "chunks_source_id")
    op.drop_column("sources", "chunks_revision_id")
