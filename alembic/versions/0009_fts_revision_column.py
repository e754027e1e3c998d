"""Search restricted to one revision inside the full-text index

``chunks_fts`` indexes each chunk's ``revision_id`` as a column of its own, so a search ANDs the
revision's token into its MATCH expression and FTS5 intersects posting lists: it scores only the
revision's rows instead of every matching row of every notebook, then discarding the others in
the join (a 10k-chunk notebook searched 17.9× slower in an instance that also held 1M chunks).
bm25 gives that column weight 0, so scores are as before. docs/decisions/0009 has the measurements.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TRIGGERS = ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update")
TOKENIZER = "porter unicode61 remove_diacritics 2"


def _rebuild_index(columns: list[str]) -> None:
    for trigger in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS chunks_fts")
    names = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    op.execute(
        f"CREATE VIRTUAL TABLE chunks_fts USING fts5({names}, content='chunks', content_rowid='id', "
        f"tokenize='{TOKENIZER}')"
    )
    insert = f"INSERT INTO chunks_fts(rowid, {names}) VALUES (new.id, {new});"
    delete = f"INSERT INTO chunks_fts(chunks_fts, rowid, {names}) VALUES ('delete', old.id, {old});"
    op.execute(f"CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN {insert} END")
    op.execute(f"CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN {delete} END")
    op.execute(f"CREATE TRIGGER chunks_fts_update AFTER UPDATE OF {names} ON chunks BEGIN {delete} {insert} END")
    op.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def upgrade() -> None:
    _rebuild_index(["revision_id", "context", "text"])


def downgrade() -> None:
    _rebuild_index(["context", "text"])
