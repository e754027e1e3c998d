"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 12:39:06.710355
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('users',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('password_hash', sa.String(length=300), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('vault_hash', 'name')
    )
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_users_vault_hash'), ['vault_hash'], unique=False)

    op.create_table('workspaces',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('vault_hash', 'name')
    )
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workspaces_vault_hash'), ['vault_hash'], unique=False)

    op.create_table('api_tokens',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.String(length=32), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('revoked_at', sa.DateTime(), nullable=True),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_tokens_user_id'), ['user_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_api_tokens_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_api_tokens_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('memberships',
    sa.Column('user_id', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', 'workspace_id')
    )
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memberships_vault_hash'), ['vault_hash'], unique=False)

    op.create_table('notebooks',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('title', sa.String(length=300), nullable=False),
    sa.Column('visibility', sa.String(length=20), nullable=False),
    sa.Column('conversation_mode', sa.String(length=20), nullable=False),
    sa.Column('creator_id', sa.String(length=32), nullable=False),
    sa.Column('table_id', sa.String(length=200), nullable=False),
    sa.Column('active_revision_id', sa.String(length=32), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['active_revision_id'], ['revisions.id'], name='fk_notebook_active_revision', use_alter=True),
    sa.ForeignKeyConstraint(['creator_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('notebooks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_notebooks_creator_id'), ['creator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_notebooks_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_notebooks_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('audit_outcomes',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=True),
    sa.Column('resource_id', sa.String(length=500), nullable=False),
    sa.Column('source_value', sa.Text(), nullable=False),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('detail', sa.String(length=500), nullable=True),
    sa.Column('checked_at', sa.DateTime(), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('audit_outcomes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_outcomes_notebook_id'), ['notebook_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_outcomes_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_outcomes_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=40), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('rerun_requested', sa.Boolean(), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('requested_by', sa.String(length=32), nullable=True),
    sa.Column('revision_id', sa.String(length=32), nullable=True),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('current_resource_id', sa.String(length=500), nullable=True),
    sa.Column('lease_owner', sa.String(length=100), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_notebook_state', ['notebook_id', 'state'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('notebook_acl',
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.String(length=32), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('notebook_id', 'user_id')
    )
    with op.batch_alter_table('notebook_acl', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_notebook_acl_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_notebook_acl_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('notebook_resources',
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('resource_id', sa.String(length=500), nullable=False),
    sa.Column('added_by', sa.String(length=32), nullable=False),
    sa.Column('added_at', sa.DateTime(), nullable=False),
    sa.Column('last_success_at', sa.DateTime(), nullable=True),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('notebook_id', 'resource_id')
    )
    with op.batch_alter_table('notebook_resources', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_notebook_resources_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_notebook_resources_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('revisions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('completed_at', sa.DateTime(), nullable=True),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('notebook_id', 'number')
    )
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_revisions_notebook_id'), ['notebook_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_revisions_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_revisions_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('sources',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('revision_id', sa.String(length=32), nullable=False),
    sa.Column('resource_id', sa.String(length=500), nullable=False),
    sa.Column('field', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('file_size', sa.Integer(), nullable=True),
    sa.Column('file_mtime_ns', sa.Integer(), nullable=True),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('error_code', sa.String(length=60), nullable=True),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.Column('mime', sa.String(length=100), nullable=True),
    sa.Column('title', sa.String(length=500), nullable=True),
    sa.Column('final_url', sa.Text(), nullable=True),
    sa.Column('etag', sa.String(length=300), nullable=True),
    sa.Column('last_modified', sa.String(length=100), nullable=True),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('page_count', sa.Integer(), nullable=True),
    sa.Column('pages_needing_ocr', sa.JSON(), nullable=False),
    sa.Column('checked_at', sa.DateTime(), nullable=True),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['revision_id'], ['revisions.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('revision_id', 'resource_id', 'field', 'value')
    )
    with op.batch_alter_table('sources', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sources_revision_id'), ['revision_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_sources_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_sources_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('chunks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('chunk_id', sa.String(length=40), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('revision_id', sa.String(length=32), nullable=False),
    sa.Column('source_id', sa.String(length=32), nullable=False),
    sa.Column('resource_id', sa.String(length=500), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('locator', sa.JSON(), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['revision_id'], ['revisions.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_id'], ['sources.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('revision_id', 'chunk_id')
    )
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.create_index('ix_chunks_revision_source', ['revision_id', 'source_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_chunks_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_chunks_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('chunk_vectors',
    sa.Column('chunk_pk', sa.Integer(), nullable=False),
    sa.Column('embedder', sa.String(length=60), nullable=False),
    sa.Column('vector', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['chunk_pk'], ['chunks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('chunk_pk')
    )

    create_chunk_fts()


FTS_TOKENIZER = "unicode61 remove_diacritics 2"


def create_chunk_fts() -> None:
    """FTS5 over chunk text, kept in sync with ``chunks`` by triggers (external content).

    External content keeps one copy of the text; the triggers make deleting a chunk (or a whole
    revision through ON DELETE CASCADE) remove its index entries too.
    """
    op.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5("
        f"text, content='chunks', content_rowid='id', tokenize='{FTS_TOKENIZER}')"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
        "INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
        "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN "
        "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); "
        "INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END"
    )


def downgrade() -> None:
    for trigger in ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS chunks_fts")
    op.drop_table('chunk_vectors')
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_chunks_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_chunks_vault_hash'))
        batch_op.drop_index('ix_chunks_revision_source')

    op.drop_table('chunks')
    with op.batch_alter_table('sources', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sources_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_sources_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_sources_revision_id'))

    op.drop_table('sources')
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_revisions_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_revisions_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_revisions_notebook_id'))

    op.drop_table('revisions')
    with op.batch_alter_table('notebook_resources', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notebook_resources_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_notebook_resources_vault_hash'))

    op.drop_table('notebook_resources')
    with op.batch_alter_table('notebook_acl', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notebook_acl_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_notebook_acl_vault_hash'))

    op.drop_table('notebook_acl')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_vault_hash'))
        batch_op.drop_index('ix_jobs_notebook_state')

    op.drop_table('jobs')
    with op.batch_alter_table('audit_outcomes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_outcomes_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_audit_outcomes_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_audit_outcomes_notebook_id'))

    op.drop_table('audit_outcomes')
    with op.batch_alter_table('notebooks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notebooks_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_notebooks_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_notebooks_creator_id'))

    op.drop_table('notebooks')
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memberships_vault_hash'))

    op.drop_table('memberships')
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_tokens_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_api_tokens_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_api_tokens_user_id'))

    op.drop_table('api_tokens')
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workspaces_vault_hash'))

    op.drop_table('workspaces')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_users_vault_hash'))

    op.drop_table('users')
