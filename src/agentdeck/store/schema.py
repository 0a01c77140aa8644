"""The tables, as SQLAlchemy Core metadata.

The migrations in ``migrations/versions`` must produce exactly this schema; a
test compares them. Change the schema here *and* add a numbered migration;
never edit a migration that has landed.
"""

from __future__ import annotations

import sqlalchemy as sa

from agentdeck.store.dialect import ID, JSON, TABLE_KWARGS
from agentdeck.store.schema_meta import metadata as metadata

agents = sa.Table(
    "agents",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("spec", JSON, nullable=False),
    sa.Column("cwd", sa.Text, nullable=False),
    sa.Column("session_id", sa.Text, nullable=True),
    sa.Column("cost_usd", sa.Float, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("current_tool", sa.Text, nullable=True),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("pid", sa.Integer, nullable=True),
    sa.Column("owner_pid", sa.Integer, nullable=True),
    sa.Column("extra", JSON, nullable=False),
    sa.Column("archived", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # Orchestration (migration 0004): the orchestrator that spawned it.
    sa.Column("parent_id", sa.Text, nullable=True),
    # Usage (migration 0008): whom and what its cost counts for (``core.usage``),
    # copied out of ``spec`` so that the usage query groups by plain columns.
    sa.Column("owner", sa.Text, nullable=False, server_default="admin"),
    sa.Column("project", sa.Text, nullable=True),
    sa.Column("template", sa.Text, nullable=True),
    sa.Index(None, "state"),
    sa.Index(None, "updated_at"),
    sa.Index(None, "parent_id"),
    sa.Index(None, "owner"),
)

# Append-only. ``id`` is allocated by the database: monotonic, never reused, so
# ``after=ID`` resumes any reader without loss, across processes.
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", ID, primary_key=True, autoincrement=True),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("ts", sa.Float, nullable=False),
    sa.Column("data", JSON, nullable=False),
    sa.Index(None, "agent_id", "id"),
    sa.Index(None, "type", "ts"),  # migration 0008: spend and usage over a period
    **TABLE_KWARGS,
)

# Cross-process steering queue: any client enqueues, the process that owns the
# live agent claims (sets claimed_at/claimed_by) and acts.
commands = sa.Table(
    "commands",
    metadata,
    sa.Column("id", ID, primary_key=True, autoincrement=True),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("payload", JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("claimed_at", sa.Float, nullable=True),
    sa.Column("claimed_by", sa.Text, nullable=True),
    sa.Index(None, "agent_id", "claimed_at"),
    **TABLE_KWARGS,
)

# Governance (migration 0002). An approval request lives from "ask" until it is
# answered, expires (→ denied) or is cancelled; rows are never deleted.
approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("input", JSON, nullable=False),
    sa.Column("tool_use_id", sa.Text, nullable=True),
    sa.Column("rule", sa.Text, nullable=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("grant_key", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("answered_at", sa.Float, nullable=True),
    sa.Column("answered_by", sa.Text, nullable=True),
    sa.Column("message", sa.Text, nullable=True),
    sa.Column("remember", sa.Text, nullable=True),
    sa.Index(None, "state", "created_at"),
    sa.Index(None, "agent_id", "state"),
)

# Remembered answers. ``grant_key`` names an agent template or profile (never a
# display name that could be reused); session grants also carry the agent id.
grants = sa.Table(
    "grants",
    metadata,
    sa.Column("id", ID, primary_key=True, autoincrement=True),
    sa.Column("grant_key", sa.Text, nullable=False),
    sa.Column("rule", sa.Text, nullable=False),
    sa.Column("decision", sa.Text, nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("created_by", sa.Text, nullable=True),
    sa.Index(None, "grant_key", "scope"),
    **TABLE_KWARGS,
)

# Hash-chained audit log of every permission decision: each entry's hash covers
# its content and the previous entry's hash, so an edit, removal or reordering
# breaks the chain from that entry on.
audit = sa.Table(
    "audit",
    metadata,
    sa.Column("id", ID, primary_key=True, autoincrement=True),
    sa.Column("ts", sa.Float, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("input_digest", sa.Text, nullable=False),
    sa.Column("decision", sa.Text, nullable=False),
    sa.Column("rule", sa.Text, nullable=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("answered_by", sa.Text, nullable=True),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    **TABLE_KWARGS,
)

# Orchestration (migration 0004): a worker's questions to its orchestrator or a
# person, and notes to its orchestrator. Rows are never deleted; an answer is
# conditional on the row still being pending, like an approval's.
asks = sa.Table(
    "asks",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("to_agent_id", sa.Text, nullable=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("answered_at", sa.Float, nullable=True),
    sa.Column("answered_by", sa.Text, nullable=True),
    sa.Column("answer", sa.Text, nullable=True),
    sa.Column("delivered_at", sa.Float, nullable=True),
    # Migration 0010: a multiple choice's questions (AskUserQuestion), else null.
    sa.Column("questions", JSON, nullable=True),
    sa.Index(None, "state", "created_at"),
    sa.Index(None, "agent_id", "state"),
    sa.Index(None, "to_agent_id", "state"),
)

# Worktrees (migration 0005): the merge queue. Rows are never deleted; an entry
# is taken by one process through a conditional ``queued -> merging``.
merges = sa.Table(
    "merges",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("repo", sa.Text, nullable=False),
    sa.Column("branch", sa.Text, nullable=False),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("strategy", sa.Text, nullable=False),
    sa.Column("test", sa.Text, nullable=True),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("by", sa.Text, nullable=False),
    sa.Column("enqueued_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Column("owner_pid", sa.Integer, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("commit", sa.Text, nullable=True),
    sa.Column("outcome", JSON, nullable=False),
    sa.Column("owner_host", sa.Text, nullable=True),  # the runner host merging it (0016)
    sa.Index(None, "state", "enqueued_at"),
    sa.Index(None, "agent_id"),
)

# Notifications (migration 0006): deliveries that failed every attempt (or found
# their target's queue full), kept to inspect and replay; ``state`` is ``dead`` or
# ``replayed``.
notify_dead = sa.Table(
    "notify_dead",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("payload", JSON, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("replayed_at", sa.Float, nullable=True),
    sa.Index(None, "state", "created_at"),
)

# Memory (migration 0003): one observation per tool call, one summary per
# session. ``fts_rowid`` is the record's row in ``memory_fts``: the index rows
# are written, replaced and deleted with the record, in the same transaction.
observations = sa.Table(
    "observations",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("project", sa.Text, nullable=False),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Column("ts", sa.Float, nullable=False),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("input_summary", sa.Text, nullable=False),
    sa.Column("output_excerpt", sa.Text, nullable=False),
    sa.Column("files", JSON, nullable=False),
    sa.Column("is_error", sa.Boolean, nullable=False),
    sa.Column("fts_rowid", sa.Integer, nullable=False),
    sa.Index(None, "project", "ts"),
    sa.Index(None, "session_id", "ts"),
)

summaries = sa.Table(
    "summaries",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("project", sa.Text, nullable=False),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Column("ts", sa.Float, nullable=False),
    sa.Column("files_changed", JSON, nullable=False),
    sa.Column("commands", JSON, nullable=False),
    sa.Column("errors", JSON, nullable=False),
    sa.Column("final_message", sa.Text, nullable=False),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("model_summary", sa.Text, nullable=True),
    sa.Column("fts_rowid", sa.Integer, nullable=False),
    sa.UniqueConstraint("session_id"),
    sa.Index(None, "project", "ts"),
)

# The full-text index over both kinds: ``title`` (an observation's call, a
# summary's first line) and ``body`` are searched; ``scope`` holds the
# project's token (``project_token``) so a project filter is one more term
# the index intersects, never a per-row lookup; ``memory_id`` maps a hit back.
# It keeps its own copy of the text (no external content): the records' text
# primary keys have no stable integer rowid to point at, and snippet() reads
# the copy by rowid. Not SQLAlchemy tables: created with ``observations`` (the
# fresh-database path) and by migration 0003, which spells the same statements
# out; a test compares the two. SQLite: an FTS5 virtual table. PostgreSQL: a
# table with a stored, weighted ``tsvector`` and a GIN index on it.
MEMORY_FTS = "memory_fts"
MEMORY_FTS_DDL = (
    "CREATE VIRTUAL TABLE memory_fts USING fts5("
    "title, body, scope, memory_id UNINDEXED, "
    "tokenize = 'porter unicode61', prefix = '3 4 5')"
)
MEMORY_FTS_PG_DDL = (
    "CREATE TABLE memory_fts ("
    "rowid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
    "title TEXT NOT NULL DEFAULT '', body TEXT NOT NULL DEFAULT '', "
    "scope TEXT NOT NULL DEFAULT '', memory_id TEXT NOT NULL, "
    "tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', title), 'A') || "
    "setweight(to_tsvector('english', body), 'B') || "
    "setweight(to_tsvector('simple', scope), 'D')) STORED)",
    "CREATE INDEX ix_memory_fts_tsv ON memory_fts USING GIN (tsv)",
    "CREATE INDEX ix_memory_fts_memory_id ON memory_fts (memory_id)",
)
# The shadow tables FTS5 creates for it, which reflection sees as tables.
MEMORY_FTS_SHADOWS = tuple(
    f"{MEMORY_FTS}_{suffix}" for suffix in ("data", "idx", "content", "docsize", "config")
)


def _create_memory_fts(_table: sa.Table, connection: sa.Connection, **_kw: object) -> None:
    if connection.dialect.name == "postgresql":
        for statement in MEMORY_FTS_PG_DDL:
            connection.exec_driver_sql(statement)
    else:
        connection.exec_driver_sql(MEMORY_FTS_DDL)


def _drop_memory_fts(_table: sa.Table, connection: sa.Connection, **_kw: object) -> None:
    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {MEMORY_FTS}")


sa.event.listen(observations, "after_create", _create_memory_fts)
sa.event.listen(observations, "before_drop", _drop_memory_fts)


def is_index_table(name: str) -> bool:
    """A full-text table or one of its shadows: outside the SQLAlchemy metadata
    (schema comparisons skip them and compare their SQL instead)."""
    return name == MEMORY_FTS or name in MEMORY_FTS_SHADOWS


# Team (migration 0007): users and their API tokens. A token is stored only as
# an indexed short lookup hash and a salted scrypt digest (``core.token_hash``);
# rows are kept when revoked (``revoked_at``) so the audit log's names stay real.
users = sa.Table(
    "users",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("user_name", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("lookup", sa.Text, nullable=False),
    sa.Column("salt", sa.Text, nullable=False),
    sa.Column("digest", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sa.Index(None, "lookup"),
    sa.Index(None, "user_name"),
)

# Usage (migration 0008): daily USD budgets of one user or one project
# (``scope`` user | project), enforced like the fleet's ``daily_usd``.
budgets = sa.Table(
    "budgets",
    metadata,
    sa.Column("scope", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("daily_usd", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

# Usage (migration 0008): per agent and UTC hour, the sums of its ``cost_updated``
# events (``store.usage_rollup``), written with them; the usage query reads these.
usage_hours = sa.Table(
    "usage_hours",
    metadata,
    sa.Column("agent_id", sa.Text, primary_key=True),
    sa.Column("hour", sa.Float, primary_key=True),
    sa.Column("cost_usd", sa.Float, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("results", sa.Integer, nullable=False),
    sa.Index(None, "hour"),
)

# Runner hosts (migration 0011): each host as it registered and heartbeats
# (``store.hosts``), and its leases on agents. A lease row stays once released or
# expired, so that the agent's fencing ``token`` only ever grows; times are the
# database's clock. ``epoch`` grows at each registration (one life of the host).
hosts = sa.Table(
    "hosts",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("hostname", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("version", sa.Text, nullable=False),
    sa.Column("capacity", sa.Integer, nullable=False),
    sa.Column("labels", JSON, nullable=False),
    sa.Column("project_roots", JSON, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
    sa.Column("stopped_at", sa.Float, nullable=True),
    sa.Column("epoch", sa.BigInteger, nullable=False),
)

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("agent_id", sa.Text, primary_key=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("token", sa.BigInteger, nullable=False),
    sa.Column("claimed_at", sa.Float, nullable=False),
    sa.Column("renewed_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("released_at", sa.Float, nullable=True),
    sa.Index(None, "host"),
    sa.Index(None, "expires_at"),
)


# Claude Code transcripts (migration 0012): a copy of an agent's session file at
# each turn's end, by the host that runs it (``store.transcripts``), so that
# another host can resume the agent once its host is lost. Scrubbed like the log.
transcripts = sa.Table(
    "transcripts",
    metadata,
    sa.Column("agent_id", sa.Text, primary_key=True),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("saved_at", sa.Float, nullable=False),
)

# Memories the agents write (migration 0013): what an agent proposed with the deck's
# ``remember`` tool (``store.memory_proposals``), pending, accepted or rejected; the
# accepted ones are told to later agents of the same template in the same project.
memory_proposals = sa.Table(
    "memory_proposals",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("agent_id", sa.Text, nullable=False),
    sa.Column("template", sa.Text, nullable=False),
    sa.Column("project", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("decided_at", sa.Float, nullable=True),
    sa.Column("decided_by", sa.Text, nullable=True),
    sa.Column("edited", sa.Boolean, nullable=False),
    sa.Index(None, "state", "created_at"),
    sa.Index(None, "agent_id", "state"),
    sa.Index(None, "template", "project", "state"),
)

# Webhook triggers (migration 0014): a named trigger starts an agent of a template
# when a signed POST reaches ``/hooks/NAME`` (``store.triggers``). The secret stays in
# its 0600 file: only its path and a fingerprint are here. A delivery's row is its
# replay guard (kept a day), its rate-limit count and the trigger's history.
triggers = sa.Table(
    "triggers",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("template", sa.Text, nullable=False),
    sa.Column("project", sa.Text, nullable=False),
    sa.Column("prompt_template", sa.Text, nullable=False),
    sa.Column("secret_file", sa.Text, nullable=False),
    sa.Column("secret_fingerprint", sa.Text, nullable=False),
    sa.Column("rate_per_min", sa.Integer, nullable=False),
    sa.Column("scenario", sa.Text, nullable=True),  # a scripted-model run's, if any
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("created_by", sa.Text, nullable=False),
)

trigger_deliveries = sa.Table(
    "trigger_deliveries",
    metadata,
    sa.Column("trigger", sa.Text, nullable=False),
    sa.Column("delivery_id", sa.Text, nullable=False),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Column("payload", sa.Text, nullable=True),
    sa.PrimaryKeyConstraint("trigger", "delivery_id"),
    sa.Index(None, "trigger", "received_at"),
)

# Tables kept in modules of their own (to keep this one small), in this metadata.
from agentdeck.store import schema_schedules as schema_schedules  # noqa: E402
from agentdeck.store import schema_sessions as schema_sessions  # noqa: E402
