"""Sign-in sessions of their own, shared rate limits, sign-in backoff, per-resource retry backoff

Cookie sessions used to be rows of ``api_tokens`` (kind "session"), so a session's secret also
worked as a bearer token and revoking the token a session was opened with left it alive. They
move to ``sign_in_sessions``; the old session rows are deleted (their holders sign in again) and
``api_tokens.kind`` goes. ``rate_limits`` and ``sign_in_failures`` keep limits in the database every
web process shares (never in the broker). ``notebook_resources`` gains the failure count and the
earliest retry time of the exponential backoff for resources that keep failing.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sign_in_sessions",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("vault_hash", sa.String(length=32), nullable=False),
        sa.Column("workspace_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column(
            "origin_token_id", sa.String(length=32), sa.ForeignKey("api_tokens.id", ondelete="CASCADE"), nullable=True
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
    )
    for column in ("vault_hash", "workspace_id", "user_id", "origin_token_id"):
        op.create_index(f"ix_sign_in_sessions_{column}", "sign_in_sessions", [column])
    op.create_table(
        "rate_limits",
        sa.Column("key", sa.String(length=300), primary_key=True),
        sa.Column("tat", sa.Float(), nullable=False),
    )
    op.create_table(
        "sign_in_failures",
        sa.Column("key", sa.String(length=300), primary_key=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(), nullable=False),
    )
    op.execute("DELETE FROM api_tokens WHERE kind = 'session'")
    op.execute("ALTER TABLE api_tokens DROP COLUMN kind")
    op.execute("ALTER TABLE notebook_resources ADD COLUMN failures INTEGER NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE notebook_resources ADD COLUMN retry_at DATETIME")


def downgrade() -> None:
    """SQLite's own ADD/DROP COLUMN: a batch rebuild would cascade-delete rows that reference
    the rebuilt tables."""
    op.execute("ALTER TABLE notebook_resources DROP COLUMN retry_at")
    op.execute("ALTER TABLE notebook_resources DROP COLUMN failures")
    op.execute("ALTER TABLE api_tokens ADD COLUMN kind VARCHAR(20) NOT NULL DEFAULT 'api'")
    op.drop_table("sign_in_failures")
    op.drop_table("rate_limits")
    op.drop_table("sign_in_sessions")
