"""Notifications: the dead letters of deliveries that failed.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL


def upgrade() -> None:
    op.create_table(
        "notify_dead",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("replayed_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_notify_dead"),
    )
    op.create_index("ix_notify_dead_state_created_at", "notify_dead", ["state", "created_at"])


def downgrade() -> None:
    op.drop_table("notify_dead")
