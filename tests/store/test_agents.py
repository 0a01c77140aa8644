from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentState
from agentdeck.core.events import StateChanged, StoredEvent
from agentdeck.errors import NotFound, StoreError, UsageError
from agentdeck.store import Store

from .conftest import Collector, db_rows, make_agent, text

pytestmark = pytest.mark.anyio


async def test_save_and_get_round_trip(store: Store) -> None:
    agent = make_agent(
        "a0kz3m1x9q4wfc2",
        source=AgentSource.EXTERNAL,
        session_id="s-1",
        cost_usd=0.25,
        input_tokens=10,
        output_tokens=20,
        turns=3,
        current_tool="Bash",
        last_error="boom",
        pid=123,
        owner_pid=456,
        extra={"tags": ["x"], "n": 1},
    )
    await store.save_agent(agent)
    assert await store.get_agent(agent.id) == agent

    changed = agent.with_changes(state=AgentState.IDLE, turns=4, updated_at=2000.0)
    await store.save_agent(changed)
    assert await store.get_agent(agent.id) == changed
    assert db_rows(store, "SELECT count(*) FROM agents") == [(1,)]


async def test_unknown_agent_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as info:
        await store.get_agent("nope")
    assert (info.value.kind, info.value.ident) == ("agent", "nope")
    with pytest.raises(NotFound):
        await store.find_agent("nope")
    with pytest.raises(NotFound):
        await store.set_archived("nope")


async def test_record_commits_agent_and_events_together(store: Store) -> None:
    agent = make_agent("a1", state=AgentState.STARTING)
    await store.save_agent(agent)
    seen: list[tuple[str, ...]] = []
    collector = Collector()

    def check(events: Sequence[StoredEvent]) -> None:
        seen.extend(db_rows(store, "SELECT state FROM agents WHERE id = 'a1'"))
        collector(events)

    store.subscribe(check)
    running = agent.with_changes(state=AgentState.RUNNING)
    stored = await store.record(
        [StateChanged(agent_id="a1", ts=1.0, old="starting", new="running")], running
    )
    await collector.wait_count(1)
    assert seen == [("running",)]  # the row changed in the same commit as the event
    assert (await store.get_agent("a1")).state is AgentState.RUNNING
    assert [e.id for e in await store.read(agent_id="a1")] == [s.id for s in stored]


async def test_failed_record_writes_neither_events_nor_agent(store: Store) -> None:
    bad = make_agent("bad").with_changes(name=None)  # violates NOT NULL
    with pytest.raises(StoreError, match="database write failed"):
        await store.record([text("bad", 0), text("bad", 1)], bad)
    assert await store.read() == []
    with pytest.raises(NotFound):
        await store.get_agent("bad")
    # the store is still usable, and a good record in the same moment succeeds
    stored = await store.record([text("good", 0)], make_agent("good"))
    assert stored[0].id >= 1
    assert (await store.get_agent("good")).id == "good"


async def _board(store: Store) -> list[Agent]:
    agents = [
        make_agent("a0aaaa1111", name="alpha", created_at=1.0),
        make_agent("a0aaaa2222", name="beta", created_at=2.0, state=AgentState.IDLE),
        make_agent("a0bbbb3333", name="twin", created_at=3.0, state=AgentState.DONE),
        make_agent("a0cccc4444", name="twin", created_at=4.0, state=AgentState.ERROR),
        make_agent("a0dddd5555", name="50%_off", created_at=5.0),
    ]
    for a in agents:
        await store.save_agent(a)
    return agents


async def test_find_agent_by_id_prefix_and_name(store: Store) -> None:
    await _board(store)
    assert (await store.find_agent("a0aaaa1111")).name == "alpha"
    assert (await store.find_agent("a0bbbb")).id == "a0bbbb3333"
    assert (await store.find_agent("a0bb")).id == "a0bbbb3333"
    assert (await store.find_agent("beta")).id == "a0aaaa2222"
    with pytest.raises(NotFound):
        await store.find_agent("a0b")  # too short for a prefix, and no such name

    with pytest.raises(UsageError) as info:
        await store.find_agent("a0aaaa")
    assert "a0aaaa1111" in str(info.value) and "a0aaaa2222" in str(info.value)

    with pytest.raises(UsageError) as info:
        await store.find_agent("twin")
    assert "a0bbbb3333" in str(info.value) and "a0cccc4444" in str(info.value)

    with pytest.raises(NotFound):
        await store.find_agent("a0%")  # LIKE wildcards are literal


async def test_list_filters_and_pagination(store: Store) -> None:
    agents = await _board(store)
    newest_first = [a.id for a in reversed(agents)]
    assert [a.id for a in await store.list_agents()] == newest_first

    pages = [await store.list_agents(limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert [[a.id for a in p] for p in pages] == [
        newest_first[0:2],
        newest_first[2:4],
        newest_first[4:5],
        [],
    ]

    live = await store.list_agents(states=[AgentState.RUNNING, AgentState.IDLE])
    assert {a.id for a in live} == {"a0aaaa1111", "a0aaaa2222", "a0dddd5555"}
    assert [a.name for a in await store.list_agents(text="twi")] == ["twin", "twin"]
    assert [a.id for a in await store.list_agents(text="50%")] == ["a0dddd5555"]
    assert [a.id for a in await store.list_agents(text="%")] == ["a0dddd5555"]
    assert [a.id for a in await store.list_agents(text="aaaa2")] == ["a0aaaa2222"]
    assert len(await store.list_agents(text="prompt for")) == 5  # matches the spec
    assert await store.list_agents(states=[]) == []

    await store.set_archived("a0dddd5555")
    assert "a0dddd5555" not in {a.id for a in await store.list_agents()}
    archived = await store.list_agents(include_archived=True)
    assert [a.id for a in archived] == newest_first
    # saving an archived agent again does not unarchive it
    await store.save_agent(agents[-1].with_changes(turns=9))
    assert "a0dddd5555" not in {a.id for a in await store.list_agents()}
    await store.set_archived("a0dddd5555", False)
    assert "a0dddd5555" in {a.id for a in await store.list_agents()}


async def test_stats(store: Store) -> None:
    assert (await store.stats()).agents == 0
    await store.save_agent(make_agent("a1", cost_usd=0.5, input_tokens=10, output_tokens=1))
    await store.save_agent(
        make_agent("a2", state=AgentState.DONE, cost_usd=0.25, input_tokens=5, turns=2)
    )
    await store.append([text("a1", 0)])
    await store.enqueue_command("a1", "interrupt", {})
    stats = await store.stats()
    assert stats.agents == 2
    assert stats.agents_by_state == {"running": 1, "done": 1}
    assert stats.cost_usd == pytest.approx(0.75)
    assert (stats.input_tokens, stats.output_tokens, stats.turns) == (15, 1, 2)
    assert stats.last_event_id == 1
    assert stats.pending_commands == 1
