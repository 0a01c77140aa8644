"""Memories the agents write (issue 31, item 5): what an agent proposed with the
deck's ``remember`` tool, waiting for a person or accepted (``core.memory_proposals``);
the accepted ones are told to later agents of the same template in the same project.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_proposals",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("agent_id", sa.Text, nullable=False),
        sa.Column("template", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("decided_at", sa.Float, nullable=True),
        sa.Column("decided_by", sa.Text, nullable=True),
        sa.Column("edited", sa.Boolean, nullable=False),
    )
    op.create_index(
        "ix_memory_proposals_state_created_at", "memory_proposals", ["state", "created_at"]
    )
    op.create_index("ix_memory_proposals_agent_id_state", "memory_proposals", ["agent_id", "state"])
    op.create_index(
        "ix_memory_proposals_template_project_state",
        "memory_proposals",
        ["template", "project", "state"],
    )


def downgrade() -> None:
    op.drop_table("memory_proposals")
