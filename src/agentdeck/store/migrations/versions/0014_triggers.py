"""Webhook triggers (issue 33, item 2): a named trigger starts an agent of a template
when a signed POST reaches ``/hooks/NAME`` (``core.triggers``); its deliveries are kept
for the replay guard, the rate limit and the trigger's history. The secret itself is
never stored: only the path of its 0600 file and a fingerprint.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "triggers",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("template", sa.Text, nullable=False),
        sa.Column("project", sa.Text, nullable=False),
        sa.Column("prompt_template", sa.Text, nullable=False),
        sa.Column("secret_file", sa.Text, nullable=False),
        sa.Column("secret_fingerprint", sa.Text, nullable=False),
        sa.Column("rate_per_min", sa.Integer, nullable=False),
        sa.Column("scenario", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("created_by", sa.Text, nullable=False),
    )
    op.create_table(
        "trigger_deliveries",
        sa.Column("trigger", sa.Text, nullable=False),
        sa.Column("delivery_id", sa.Text, nullable=False),
        sa.Column("event", sa.Text, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("agent_id", sa.Text, nullable=True),
        sa.Column("payload", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("trigger", "delivery_id"),
    )
    op.create_index(
        "ix_trigger_deliveries_trigger_received_at",
        "trigger_deliveries",
        ["trigger", "received_at"],
    )


def downgrade() -> None:
    op.drop_table("trigger_deliveries")
    op.drop_table("triggers")
