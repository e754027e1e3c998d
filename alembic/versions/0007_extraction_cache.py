"""Sources remember their cached extraction, their chunking recipe and their send attempts

``extraction_key`` names the cached extraction a source's chunks were made from (retention keeps
an entry while a kept source names it); ``chunking`` is the recipe (chunk size, overlap,
embedder) they were made with, so a change of it chunks again from the cache; ``attempts`` counts
how often a source was sent to the extract workers, so one that keeps killing its worker ends in
``error`` instead of being resent forever.

Every source indexed before this revision was chunked with the defaults of the time (1,200
characters, 150 overlap) and embedded by the only embedder there was: recording that recipe keeps
an upgrade from chunking every notebook again.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE sources ADD COLUMN extraction_key VARCHAR(64)")
    op.execute("ALTER TABLE sources ADD COLUMN chunking VARCHAR(200)")
    op.execute("ALTER TABLE sources ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")
    op.create_index("ix_sources_extraction_key", "sources", ["extraction_key"])
    op.execute("UPDATE sources SET chunking = 'chunks 1200/150; vectors hashing-v1' WHERE state IN ('available', 'stale')")


def downgrade() -> None:
    """SQLite's own DROP COLUMN: a batch rebuild would cascade-delete the sources' chunks."""
    op.drop_index("ix_sources_extraction_key", "sources")
    op.execute("ALTER TABLE sources DROP COLUMN attempts")
    op.execute("ALTER TABLE sources DROP COLUMN chunking")
    op.execute("ALTER TABLE sources DROP COLUMN extraction_key")
