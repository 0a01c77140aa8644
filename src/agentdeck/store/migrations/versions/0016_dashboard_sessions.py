"""Dashboard sessions in the database (issue 30, item 4): a login on one API node
opens the dashboard on every node. Only a SHA-256 of the session id is kept (the
cookie's value is never stored), with its user, its token, when it started and
when it ends. Merge queue entries record the runner host that takes them
(``owner_host``: a pid means nothing on another machine).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("user_name", sa.Text, nullable=False),
        sa.Column("token_id", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_dashboard_sessions_token_id", "dashboard_sessions", ["token_id"])
    op.create_index("ix_dashboard_sessions_expires_at", "dashboard_sessions", ["expires_at"])
    op.add_column("merges", sa.Column("owner_host", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("merges") as batch:
        batch.drop_column("owner_host")
    op.drop_index("ix_dashboard_sessions_expires_at", "dashboard_sessions")
    op.drop_index("ix_dashboard_sessions_token_id", "dashboard_sessions")
    op.drop_table("dashboard_sessions")
