"""Texts an older version wrote raw, scrubbed in place: each agent's prompt as
typed (``agents.spec``, marked ``prompt_redacted`` in ``extra`` when that changed
it, as the store writes it now) and the steering queue's payloads
(``commands.payload``); an unclaimed command whose payload held a secret is
closed unsent (claimed by ``refused:held-a-secret``), never delivered redacted.

On SQLite ``secure_delete`` is on while it runs, so the space the raw texts leave is
zeroed, not left in the file's free pages.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from agentdeck.core.redact import scrub, scrub_value

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

REFUSED = "refused:held-a-secret"
PROMPT_REDACTED = "prompt_redacted"  # core.agent's, as of this revision


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("PRAGMA secure_delete=ON")
    _agents(conn)
    _commands(conn)


def _agents(conn: sa.Connection) -> None:
    agents = sa.table(
        "agents", sa.column("id", sa.Text()), sa.column("spec", sa.Text()), sa.column("extra")
    )
    for agent_id, spec_text, extra_text in conn.execute(
        sa.select(agents.c.id, agents.c.spec, agents.c.extra)
    ):
        spec, extra = _json(spec_text), _json(extra_text)
        prompt = str(spec.get("prompt") or "")
        shown = scrub(prompt) if prompt else prompt
        if shown == prompt:
            continue
        spec["prompt"], extra[PROMPT_REDACTED] = shown, True
        conn.execute(
            sa.update(agents)
            .where(agents.c.id == agent_id)
            .values(spec=_as_json(conn, spec), extra=_as_json(conn, extra))
        )


def _commands(conn: sa.Connection) -> None:
    commands = sa.table(
        "commands",
        sa.column("id", sa.Integer()),
        sa.column("payload", sa.Text()),
        sa.column("claimed_at", sa.Float()),
        sa.column("claimed_by", sa.Text()),
    )
    rows = conn.execute(sa.select(commands.c.id, commands.c.payload, commands.c.claimed_at))
    for command_id, payload_text, claimed_at in rows.all():
        payload = _json(payload_text)
        clean = scrub_value(payload)
        if clean == payload:
            continue
        values: dict[str, Any] = {"payload": _as_json(conn, clean)}
        if claimed_at is None:
            values.update(claimed_at=time.time(), claimed_by=REFUSED)
        conn.execute(sa.update(commands).where(commands.c.id == command_id).values(**values))


def _as_json(conn: sa.Connection, value: Any) -> Any:
    """JSON text on SQLite (as written there since 0009 landed); jsonb on PostgreSQL."""
    if conn.dialect.name == "postgresql":
        return sa.cast(sa.literal(json.dumps(value), sa.Text()), postgresql.JSONB)
    return json.dumps(value)


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def downgrade() -> None:
    """Nothing to undo: the raw texts are gone on purpose."""
