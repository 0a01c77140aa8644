"""The dashboard's sessions (migration 0016), in the metadata of ``schema``.

Apart from ``schema`` only to keep that module small; ``schema`` imports this one,
so the table is in ``schema.metadata`` whoever imports first. A row is keyed by a
SHA-256 of the session id: the id itself (the cookie's value) is never stored.
"""

from __future__ import annotations

import sqlalchemy as sa

from agentdeck.store.schema_meta import metadata

dashboard_sessions = sa.Table(
    "dashboard_sessions",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),  # store.sessions.key_of(session id)
    sa.Column("user_name", sa.Text, nullable=False),
    sa.Column("token_id", sa.Text, nullable=False),  # the token it logged in with
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Index(None, "token_id"),
    sa.Index(None, "expires_at"),
)
