"""Memory: observations, session summaries and their full-text index (FTS5).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Spelled out, not imported: a landed migration must not change with schema.py.
MEMORY_FTS_DDL = (
    "CREATE VIRTUAL TABLE memory_fts USING fts5("
    "title, body, scope, memory_id UNINDEXED, "
    "tokenize = 'porter unicode61', prefix = '3 4 5')"
)


def upgrade() -> None:
    op.create_table(
        "observations",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=True),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("tool", sa.Text(), nullable=False),
        sa.Column("input_summary", sa.Text(), nullable=False),
        sa.Column("output_excerpt", sa.Text(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("fts_rowid", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_observations"),
    )
    op.create_index("ix_observations_project_ts", "observations", ["project", "ts"])
    op.create_index("ix_observations_session_id_ts", "observations", ["session_id", "ts"])

    op.create_table(
        "summaries",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=True),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("files_changed", sa.JSON(), nullable=False),
        sa.Column("commands", sa.JSON(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("final_message", sa.Text(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("model_summary", sa.Text(), nullable=True),
        sa.Column("fts_rowid", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_summaries"),
        sa.UniqueConstraint("session_id", name="uq_summaries_session_id"),
    )
    op.create_index("ix_summaries_project_ts", "summaries", ["project", "ts"])

    op.execute(MEMORY_FTS_DDL)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS memory_fts")
    op.drop_table("summaries")
    op.drop_table("observations")
