"""Orchestration: the agent tree (agents.parent_id) and asks.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agents", sa.Column("parent_id", sa.Text(), nullable=True))
    op.create_index("ix_agents_parent_id", "agents", ["parent_id"])
    op.create_table(
        "asks",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("to_agent_id", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("answered_at", sa.Float(), nullable=True),
        sa.Column("answered_by", sa.Text(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_asks"),
    )
    op.create_index("ix_asks_state_created_at", "asks", ["state", "created_at"])
    op.create_index("ix_asks_agent_id_state", "asks", ["agent_id", "state"])
    op.create_index("ix_asks_to_agent_id_state", "asks", ["to_agent_id", "state"])


def downgrade() -> None:
    op.drop_table("asks")
    op.drop_index("ix_agents_parent_id", table_name="agents")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("parent_id")
