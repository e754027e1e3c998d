"""Chunk context: the document's names indexed beside each chunk's text

``sources.resource_title`` keeps the record's title as of the revision; ``chunks.context`` holds
pipeline.chunk_context of its source, and ``chunks_fts`` indexes (context, text) so bm25 can weight
the two columns. Existing chunks are backfilled from their sources (without a record title, which
earlier revisions did not keep: the next extraction or reuse adds it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pipeline.chunk_context import chunk_context

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
    connection = op.get_bind()
    sources = connection.execute(
        sa.text("SELECT id, title, kind, value FROM sources WHERE id IN (SELECT DISTINCT source_id FROM chunks)")
    ).all()
    for source_id, title, kind, value in sources:
        context = chunk_context(resource_title=None, source_title=title, kind=kind, value=value)
        connection.execute(
            sa.text("UPDATE chunks SET context = :context WHERE source_id = :source_id"),
            {"context": context, "source_id": source_id},
        )
    _create_index(["context", "text"])


def downgrade() -> None:
    _drop_index()
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("context")
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("resource_title")
    _create_index(["text"])
