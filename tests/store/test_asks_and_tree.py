"""Asks and the agent tree in the store: answered once, delivered once, the tree
read level by level, and migration 0004 on a database from before it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from alembic import command

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.store import Store, dialect, migrate
from agentdeck.store.asks import AskStore

from .conftest import sqlite_rows

pytestmark = pytest.mark.anyio


def ask(ask_id: str, agent_id: str = "a1", kind: AskKind = AskKind.QUESTION, **kw: object) -> Ask:
    now = time.time()
    return Ask(
        id=ask_id,
        kind=kind,
        agent_id=agent_id,
        to_agent_id=kw.pop("to", "boss"),  # type: ignore[arg-type]
        text=f"text of {ask_id}",
        state=AskState.PENDING,
        created_at=kw.pop("at", now),  # type: ignore[arg-type]
        expires_at=now + 60,
    )


def agent(agent_id: str, parent: str | None = None, at: float = 0.0) -> Agent:
    return Agent(
        id=agent_id,
        name=agent_id,
        state=AgentState.IDLE,
        spec=AgentSpec(prompt="p"),
        cwd="/w",
        created_at=at,
        updated_at=at,
        parent_id=parent,
    )


async def test_a_question_is_answered_once_whoever_tries(store: Store) -> None:
    asks = AskStore(store)
    await asks.create(ask("ak000000000001"))
    first, second = await asyncio.gather(
        asks.decide("ak000000000001", AskState.ANSWERED, by="agent:boss", answer="yes"),
        asks.decide("ak000000000001", AskState.ANSWERED, by="user:web", answer="no"),
    )
    winners = [x for x in (first, second) if x is not None]
    assert len(winners) == 1 and winners[0].state == AskState.ANSWERED
    stored = await asks.get("ak000000000001")
    assert (stored.answer, stored.answered_by) == (winners[0].answer, winners[0].answered_by)
    assert await asks.decide("ak000000000001", AskState.EXPIRED, by="timeout") is None
    assert (await asks.find("ak0000")).id == "ak000000000001"


async def test_lists_filter_by_state_kind_asker_recipient_and_delivery(store: Store) -> None:
    asks = AskStore(store)
    await asks.create(ask("ak1", at=1.0))
    await asks.create(ask("ak2", agent_id="a2", at=2.0, to=None))
    await asks.create(ask("nt1", kind=AskKind.NOTE, at=3.0))
    assert [a.id for a in await asks.list_asks()] == ["ak2", "ak1"]
    assert [a.id for a in await asks.list_asks(agent_ids=["a2"])] == ["ak2"]
    assert [a.id for a in await asks.list_asks(to_agent_id="boss")] == ["ak1"]
    notes = await asks.list_asks(kind=AskKind.NOTE, undelivered=True)
    assert [n.id for n in notes] == ["nt1"]
    await asks.mark_delivered(["nt1", "ak1"])
    assert await asks.list_asks(kind=AskKind.NOTE, undelivered=True) == []
    note = await asks.get("nt1")
    assert note.state == AskState.DELIVERED and note.delivered_at is not None
    question = await asks.get("ak1")
    assert question.state == AskState.PENDING and question.delivered_at is not None


async def test_the_tree_is_read_level_by_level(store: Store) -> None:
    for a in (
        agent("root", at=1),
        agent("c1", "root", at=2),
        agent("c2", "root", at=3),
        agent("g1", "c1", at=4),
        agent("other", at=5),
    ):
        await store.save_agent(a)
    assert [a.id for a in await store.children(["root"])] == ["c1", "c2"]
    assert [a.id for a in await store.descendants(["root"])] == ["c1", "c2", "g1"]
    assert [a.id for a in await store.list_agents(roots=True)] == ["other", "root"]
    assert [a.id for a in await store.list_agents(parent="c1")] == ["g1"]
    assert (await store.stats()).roots == 2
    assert (await store.get_agent("g1")).parent_id == "c1"


async def test_migration_0004_keeps_agents_and_gives_them_no_parent(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = Store.open(path)
    await store.close()
    engine = dialect.create_engine(path, writer=True)
    try:
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(conn), "0003")
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO agents (id, name, state, source, spec, cwd, cost_usd, input_tokens,"
                " output_tokens, turns, extra, archived, created_at, updated_at) VALUES"
                " ('a1', 'old', 'done', 'agentdeck', '{\"prompt\": \"p\"}', '/w', 0, 0, 0, 0,"
                " '{}', 0, 1.0, 1.0)"
            )
    finally:
        engine.dispose()
    names = {n for _, n, _ in sqlite_rows(path, "SELECT type, name, sql FROM sqlite_master")}
    assert "asks" not in names
    store = Store.open(path)  # migrates to head
    try:
        old = await store.get_agent("a1")
        assert old.parent_id is None and old.spec.template is None and old.spec.tools == ()
        await AskStore(store).create(ask("ak1", agent_id="a1"))
        assert [a.id for a in await AskStore(store).list_asks()] == ["ak1"]
    finally:
        await store.close()
    assert sqlite_rows(path, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]
    engine = dialect.create_engine(path, writer=True)
    try:
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(conn), "0003")
    finally:
        engine.dispose()
    assert "asks" not in {n for _, n in sqlite_rows(path, "SELECT type, name FROM sqlite_master")}
    columns = [r[1] for r in sqlite_rows(path, "PRAGMA table_info(agents)")]
    assert "parent_id" not in columns and "id" in columns
