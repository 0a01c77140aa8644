"""Runner hosts and their leases on agents (issue 30, item 3): ``hosts`` (each
host as it registered, its heartbeat) and ``leases`` (one row per agent ever
claimed; its fencing ``token`` only grows).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL


def upgrade() -> None:
    op.create_table(
        "hosts",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("hostname", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("version", sa.Text, nullable=False),
        sa.Column("capacity", sa.Integer, nullable=False),
        sa.Column("labels", JSON, nullable=False),
        sa.Column("project_roots", JSON, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
        sa.Column("stopped_at", sa.Float, nullable=True),
        sa.Column("epoch", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "leases",
        sa.Column("agent_id", sa.Text, primary_key=True),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("token", sa.BigInteger, nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
        sa.Column("renewed_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("released_at", sa.Float, nullable=True),
    )
    op.create_index("ix_leases_host", "leases", ["host"])
    op.create_index("ix_leases_expires_at", "leases", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_leases_expires_at", table_name="leases")
    op.drop_index("ix_leases_host", table_name="leases")
    op.drop_table("leases")
    op.drop_table("hosts")
