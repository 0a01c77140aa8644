"""Worktrees: the merge queue.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL


def upgrade() -> None:
    op.create_table(
        "merges",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("repo", sa.Text(), nullable=False),
        sa.Column("branch", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("strategy", sa.Text(), nullable=False),
        sa.Column("test", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("by", sa.Text(), nullable=False),
        sa.Column("enqueued_at", sa.Float(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.Column("owner_pid", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("commit", sa.Text(), nullable=True),
        sa.Column("outcome", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_merges"),
    )
    op.create_index("ix_merges_state_enqueued_at", "merges", ["state", "enqueued_at"])
    op.create_index("ix_merges_agent_id", "merges", ["agent_id"])


def downgrade() -> None:
    op.drop_table("merges")
