"""conversations

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 12:56:05.773072
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('conversation_threads',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('mode', sa.String(length=20), nullable=False),
    sa.Column('principal', sa.String(length=80), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['notebook_id'], ['notebooks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('notebook_id', 'mode', 'principal')
    )
    with op.batch_alter_table('conversation_threads', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_conversation_threads_notebook_id'), ['notebook_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_conversation_threads_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_conversation_threads_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('messages',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('thread_id', sa.String(length=32), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('author_id', sa.String(length=32), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=True),
    sa.Column('citations', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('vault_hash', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['thread_id'], ['conversation_threads.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_messages_thread_id'), ['thread_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_messages_vault_hash'), ['vault_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_messages_workspace_id'), ['workspace_id'], unique=False)

    op.create_table('revision_pins',
    sa.Column('message_id', sa.Integer(), nullable=False),
    sa.Column('notebook_id', sa.String(length=32), nullable=False),
    sa.Column('revision_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['message_id'], ['messages.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('message_id', 'notebook_id')
    )
    with op.batch_alter_table('revision_pins', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_revision_pins_revision_id'), ['revision_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('revision_pins', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_revision_pins_revision_id'))

    op.drop_table('revision_pins')
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_messages_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_messages_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_messages_thread_id'))

    op.drop_table('messages')
    with op.batch_alter_table('conversation_threads', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_conversation_threads_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_conversation_threads_vault_hash'))
        batch_op.drop_index(batch_op.f('ix_conversation_threads_notebook_id'))

    op.drop_table('conversation_threads')
