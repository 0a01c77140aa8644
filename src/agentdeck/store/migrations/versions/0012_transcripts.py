"""Claude Code transcripts kept in the database (issue 30, item 6): a copy of an
agent's session file taken at each turn's end by the host that runs it, so that
another runner host can resume the agent after its host is lost, without the
dead host's disk.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "transcripts",
        sa.Column("agent_id", sa.Text, primary_key=True),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("saved_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("transcripts")
