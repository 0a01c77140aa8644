"""Schedules (issue 33, item 1): a named schedule starts an agent each time its cron
expression comes due (``core.schedules``); each due time's outcome (started, queued,
skipped, refused by its budget, missed while the daemon was down) is a run row, the
schedule's history. ``next_at`` is kept so a restarted daemon knows what it missed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("cron", sa.Text, nullable=False),
        sa.Column("tz", sa.Text, nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("template", sa.Text, nullable=True),
        sa.Column("scenario", sa.Text, nullable=True),
        sa.Column("cwd", sa.Text, nullable=True),
        sa.Column("worktree", sa.Boolean, nullable=False),
        sa.Column("budget_usd", sa.Float, nullable=True),
        sa.Column("overlap", sa.Text, nullable=False),
        sa.Column("catch_up", sa.Text, nullable=False),
        sa.Column("paused", sa.Boolean, nullable=False),
        sa.Column("next_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("created_by", sa.Text, nullable=False),
    )
    op.create_table(
        "schedule_runs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("schedule", sa.Text, nullable=False),
        sa.Column("due_at", sa.Float, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("agent_id", sa.Text, nullable=True),
    )
    op.create_index("ix_schedule_runs_schedule_at", "schedule_runs", ["schedule", "at"])
    op.create_index("ix_schedule_runs_outcome", "schedule_runs", ["outcome"])


def downgrade() -> None:
    op.drop_table("schedule_runs")
    op.drop_table("schedules")
