"""Usage: whom and what an agent's cost counts for, daily budgets, an index
for spend over a period.

``agents.owner`` / ``project`` / ``template`` are copied out of ``spec``
(existing agents: their spec's project or cwd and template; owner ``admin``, the
legacy single token's user). ``ix_events_type_ts`` serves the usage and spend
queries, which read one event type over a time window.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from agentdeck.store.dialect import json_number, time_bucket

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL


def upgrade() -> None:
    op.add_column("agents", sa.Column("owner", sa.Text(), nullable=False, server_default="admin"))
    op.add_column("agents", sa.Column("project", sa.Text(), nullable=True))
    op.add_column("agents", sa.Column("template", sa.Text(), nullable=True))
    op.create_index("ix_agents_owner", "agents", ["owner"])
    op.create_index("ix_events_type_ts", "events", ["type", "ts"])
    op.create_table(
        "budgets",
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("daily_usd", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "name", name="pk_budgets"),
    )
    op.create_table(
        "usage_hours",
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("hour", sa.Float(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("results", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "hour", name="pk_usage_hours"),
    )
    op.create_index("ix_usage_hours_hour", "usage_hours", ["hour"])
    conn = op.get_bind()
    _backfill_usage(conn)
    agents = sa.table(
        "agents",
        sa.column("id", sa.Text()),
        sa.column("spec", sa.Text()),
        sa.column("cwd", sa.Text()),
        sa.column("owner", sa.Text()),
        sa.column("project", sa.Text()),
        sa.column("template", sa.Text()),
    )
    for agent_id, spec_text, cwd in conn.execute(
        sa.select(agents.c.id, agents.c.spec, agents.c.cwd)
    ):
        spec: dict[str, Any] = _spec(spec_text)
        conn.execute(
            sa.update(agents)
            .where(agents.c.id == agent_id)
            .values(
                owner=spec.get("owner") or "admin",
                project=spec.get("project") or spec.get("cwd") or cwd,
                template=spec.get("template"),
            )
        )


def _backfill_usage(conn: sa.Connection) -> None:
    """The rollup of the costs already in the log (``store.usage_rollup``)."""
    events = sa.table(
        "events",
        sa.column("agent_id", sa.Text()),
        sa.column("type", sa.Text()),
        sa.column("ts", sa.Float()),
        sa.column("data", JSON),
    )
    hour = time_bucket(events.c.ts, 3600)
    select = (
        sa.select(
            events.c.agent_id,
            hour,
            sa.func.sum(json_number(events.c.data, "delta_usd")),
            sa.func.sum(json_number(events.c.data, "input_tokens")),
            sa.func.sum(json_number(events.c.data, "output_tokens")),
            sa.func.count(),
        )
        .where(events.c.type == "cost_updated")
        .group_by(events.c.agent_id, hour)
    )
    usage = sa.table(
        "usage_hours",
        *(
            sa.column(n)
            for n in ("agent_id", "hour", "cost_usd", "input_tokens", "output_tokens", "results")
        ),
    )
    conn.execute(sa.insert(usage).from_select(list(usage.c.keys()), select))


def _spec(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def downgrade() -> None:
    op.drop_table("usage_hours")
    op.drop_table("budgets")
    op.drop_index("ix_events_type_ts", table_name="events")
    op.drop_index("ix_agents_owner", table_name="agents")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("template")
        batch.drop_column("project")
        batch.drop_column("owner")
