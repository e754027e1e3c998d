"""Chunk context: the document's names indexed beside each chunk's text

``sources.resource_title`` keeps the record's title as of the revision; ``chunks.context`` holds
pipeline.chunk_context of its source, and ``chunks_fts`` indexes (context, text) so bm25 can weight
the two columns. Existing chunks get their source's declared title here; earlier revisions kept no
record title, so the next trigger of each notebook sees every title as changed and builds a revision
whose copied chunks carry the full context (without re-extracting anything).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TRIGGERS = ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update")
TOKENIZER = "porter unicode61 remove_diacritics 2"


def _drop_index() -> None:
    for trigger in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS chunks_fts")


def _create_index(columns: list[str]) -> None:
    names = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    op.execute(
        f"CREATE VIRTUAL TABLE chunks_fts USING fts5({names}, content='chunks', content_rowid='id', "
        f"tokenize='{TOKENIZER}')"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
        f"INSERT INTO chunks_fts(rowid, {names}) VALUES (new.id, {new}); END"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
        f"INSERT INTO chunks_fts(chunks_fts, rowid, {names}) VALUES ('delete', old.id, {old}); END"
    )
    op.execute(
        f"CREATE TRIGGER chunks_fts_update AFTER UPDATE OF {names} ON chunks BEGIN "
        f"INSERT INTO chunks_fts(chunks_fts, rowid, {names}) VALUES ('delete', old.id, {old}); "
        f"INSERT INTO chunks_fts(rowid, {names}) VALUES (new.id, {new}); END"
    )
    op.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def upgrade() -> None:
    _drop_index()
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("resource_title", sa.String(length=500), nullable=True))
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("context", sa.Text(), nullable=False, server_default=""))
    op.execute(
        "UPDATE chunks SET context = coalesce((SELECT title FROM sources WHERE sources.id = chunks.source_id), '')"
    )
    _create_index(["context", "text"])


def downgrade() -> None:
    """SQLite's own DROP COLUMN: a batch rebuild would drop the old tables with foreign keys on,
    and ON DELETE CASCADE would empty chunks and chunk_vectors on the way."""
    _drop_index()
    op.execute("ALTER TABLE chunks DROP COLUMN context")
    op.execute("ALTER TABLE sources DROP COLUMN resource_title")
    _create_index(["text"])
