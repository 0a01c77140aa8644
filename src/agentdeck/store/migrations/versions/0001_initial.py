"""Initial schema: agents, events, commands.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # bigint on PostgreSQL


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("spec", JSON, nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("current_tool", sa.Text(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("owner_pid", sa.Integer(), nullable=True),
        sa.Column("extra", JSON, nullable=False),
        sa.Column("archived", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
    )
    op.create_index("ix_agents_state", "agents", ["state"])
    op.create_index("ix_agents_updated_at", "agents", ["updated_at"])

    op.create_table(
        "events",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("data", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_agent_id_id", "events", ["agent_id", "id"])

    op.create_table(
        "commands",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("claimed_at", sa.Float(), nullable=True),
        sa.Column("claimed_by", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_commands"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_commands_agent_id_claimed_at", "commands", ["agent_id", "claimed_at"])


def downgrade() -> None:
    op.drop_table("commands")
    op.drop_table("events")
    op.drop_table("agents")
