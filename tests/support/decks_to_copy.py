"""A SQLite home with rows in every table, for ``agentdeck db migrate`` (``store.copy``).

``fill_home`` writes through the store's own API where one exists (agents, events
and their usage roll-up, the audit chain, commands, users and tokens, memory and
its full-text rows, approvals and grants, asks, merges, dead letters, budgets);
``fill_every_table`` then gives any table still empty one row made from its
column types, so a table added later is copied by the tests before anyone
remembers to fill it here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.audit import AuditDecision, AuditRecord
from agentdeck.core.events import AssistantText, CostUpdated, Event
from agentdeck.core.memory import Observation, SessionSummary
from agentdeck.core.roles import Role
from agentdeck.store import Store
from agentdeck.store.copy_plan import base_type
from agentdeck.store.memory import MemoryStore
from agentdeck.store.schema import metadata
from agentdeck.store.users import UserStore

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def agent(n: int) -> Agent:
    return Agent(
        id=f"a{n:04d}",
        name=f"agent-{n}",
        state=AgentState.IDLE,
        spec=AgentSpec(prompt=f"task {n} — ünïcode ✓", allow=("Bash(pytest *)",)),
        cwd="/work/proj",
        created_at=T0 + n,
        updated_at=T0 + n,
    )


async def _fill(db: Path, *, agents: int, events: int, audit: int, batch: int) -> None:
    store = Store.open(db)
    try:
        made = [agent(n) for n in range(agents)]
        for a in made:
            await store.save_agent(a)
        written = 0
        while written < events:
            chunk: list[Event] = []
            for i in range(written, min(events, written + batch)):
                owner = made[i % len(made)].id
                if i % 10 == 9:
                    chunk.append(
                        CostUpdated(
                            agent_id=owner,
                            ts=T0 + i,
                            cost_usd=0.01 * i,
                            input_tokens=i,
                            output_tokens=i,
                            delta_usd=0.01,
                        )
                    )
                else:
                    chunk.append(AssistantText(agent_id=owner, ts=T0 + i, text=f"msg {i} {{}}"))
            await store.append(chunk)
            written += len(chunk)
        for i in range(audit):
            await store.append_audit(
                AuditRecord.for_input(
                    agent_id=made[i % len(made)].id,
                    tool="Bash",
                    tool_input={"command": f"ls /tmp/x{i}"},
                    decision=AuditDecision.DENY if i % 2 else AuditDecision.ALLOWED,
                    reason=f"reason {i}",
                    rule="Bash(rm *)" if i % 2 else None,
                    answered_by="policy",
                    ts=T0 + i,
                )
            )
        await store.enqueue_command(made[0].id, "send", {"text": "hello"})
        users = UserStore(store)
        await users.add_user("ada", Role.OPERATOR)
        await users.create_token("ada", name="laptop")
        memory = MemoryStore(store)
        await memory.add_observation(
            Observation(
                id="ob000000000001",
                project="/work/proj",
                session_id="s1",
                agent_id=made[0].id,
                ts=T0,
                tool="Bash",
                input_summary="Bash(pytest -q tests/test_retry.py)",
                output_excerpt="3 passed",
            )
        )
        await memory.save_summary(
            SessionSummary(
                id="su000000000001",
                project="/work/proj",
                session_id="s1",
                agent_id=made[0].id,
                ts=T0 + 1,
                request="fix the failing test",
            )
        )
    finally:
        await store.close()


def _value(column: sa.Column[Any], n: int) -> Any:
    kind = base_type(column)
    if isinstance(kind, sa.JSON):
        return {"n": n, "said": "ok"}
    if isinstance(kind, sa.Boolean):
        return bool(n % 2)
    if isinstance(kind, sa.Integer):
        return n
    if isinstance(kind, sa.Float):
        return T0 + n
    return f"{column.name}-{n}"


def fill_every_table(db: Path) -> None:
    """One made-up row in each table of the schema that is still empty."""
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            for table in metadata.sorted_tables:
                if conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one():
                    continue
                conn.execute(sa.insert(table).values({c.name: _value(c, 1) for c in table.c}))
    finally:
        engine.dispose()


def fill_home(
    db: Path, *, agents: int = 3, events: int = 40, audit: int = 5, batch: int = 500
) -> Path:
    """A home's database with rows in every table; returns ``db``."""
    asyncio.run(_fill(db, agents=agents, events=events, audit=audit, batch=batch))
    fill_every_table(db)
    return db


# --- the target ---------------------------------------------------------------------


def prepare_pg(url: str) -> None:
    """The schema at head in an empty PostgreSQL database, as the store makes it."""
    from agentdeck.store import dialect, migrate

    engine = dialect.create_engine(url, writer=True)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
