"""Alembic environment, run programmatically by ``agentdeck.store.migrate``.

The caller passes an open connection (already inside a write transaction:
``BEGIN IMMEDIATE`` on SQLite, the advisory write lock taken on PostgreSQL) as
``config.attributes["connection"]``; no alembic.ini, no logging configuration:
the application owns logging. The same migrations run on both backends: JSON
columns are ``jsonb`` and ids ``bigint`` on PostgreSQL, and what only one has
(FTS5, a PRAGMA) is chosen by ``op.get_bind().dialect.name``.
"""

from __future__ import annotations

from alembic import context

from agentdeck.store.schema import is_index_table, metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("agentdeck migrations run through agentdeck.store.migrate only")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies tables
    # The FTS5 index and its shadow tables live outside the metadata: autogenerate
    # must not propose dropping them.
    include_name=lambda name, kind, _parent: not (kind == "table" and is_index_table(name or "")),
)
with context.begin_transaction():
    context.run_migrations()
