"""An ask's multiple-choice questions (Claude Code's AskUserQuestion) in a column of
their own, ``asks.questions`` (JSON; null for a plain question). Before, they were
kept as one JSON line after the ask's readable text, behind a trailer: those rows
are moved into the column and their text cut back to the readable part.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")  # jsonb on PostgreSQL
# Spelled out, not imported: a landed migration must not change with core.
TRAILER = "[agentdeck:choices v1] "


def upgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.add_column(sa.Column("questions", JSON, nullable=True))
    conn = op.get_bind()
    asks = sa.table(
        "asks", sa.column("id", sa.Text), sa.column("text", sa.Text), sa.column("questions", JSON)
    )
    rows = conn.execute(
        sa.select(asks.c.id, asks.c.text).where(asks.c.text.contains("\n" + TRAILER))
    ).all()
    for ask_id, stored in rows:
        moved = _split(stored)
        if moved is not None:
            text, questions = moved
            conn.execute(
                asks.update().where(asks.c.id == ask_id).values(text=text, questions=questions)
            )


def _split(stored: str) -> tuple[str, list[Any]] | None:
    at = stored.rfind("\n" + TRAILER)
    try:
        data = json.loads(stored[at + 1 + len(TRAILER) :])
    except ValueError:
        return None  # not what the trailer wrote: the text stays as it is
    if not isinstance(data, list):
        return None
    return stored[:at].rstrip("\n"), data


def downgrade() -> None:
    with op.batch_alter_table("asks") as batch:
        batch.drop_column("questions")
