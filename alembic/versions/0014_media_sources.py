"""What a source knows about a recording

Streaming sources (yt-dlp) are checked by a metadata-only probe: the media fingerprint it takes
decides whether a refresh downloads and transcribes again, so it is kept with the source like a
web page's validators. A recording's source also says how long it plays and what wrote its
transcript (a speech model, or the site's own subtitles).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("media_fingerprint", sa.String(64), nullable=True))
        batch.add_column(sa.Column("duration_seconds", sa.Float, nullable=True))
        batch.add_column(sa.Column("transcribed_by", sa.String(100), nullable=True))


def downgrade() -> None:
    # In place, not by batch mode's copy of the table: chunks and vectors reference sources, and
    # SQLite drops a column that nothing indexes without rebuilding the table.
    for column in ("transcribed_by", "duration_seconds", "media_fingerprint"):
        op.execute(f"ALTER TABLE sources DROP COLUMN {column}")
