"""Schedules' tables (migration 0015), on ``schema.metadata`` beside the others
(kept apart so ``schema`` stays small; ``schema`` imports this module, so every
table is in the metadata whichever module is imported first)."""

from __future__ import annotations

import sqlalchemy as sa

from agentdeck.store.schema_meta import metadata

# A schedule starts an agent each time its cron expression comes due
# (``store.schedules``); ``next_at`` says what a restarted daemon missed.
schedules = sa.Table(
    "schedules",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("cron", sa.Text, nullable=False),
    sa.Column("tz", sa.Text, nullable=False),
    sa.Column("prompt", sa.Text, nullable=False),  # scrubbed
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

# Each due time's outcome: its history, and (outcome ``queued``) the run waiting for
# the previous run's agent to end.
schedule_runs = sa.Table(
    "schedule_runs",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("schedule", sa.Text, nullable=False),
    sa.Column("due_at", sa.Float, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Index(None, "schedule", "at"),
    sa.Index(None, "outcome"),
)
