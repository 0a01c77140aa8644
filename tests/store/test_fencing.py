"""Fenced writes (``Store.fence_as``/``fence``, ``store.fencing``), on both
backends: a runner host's writes for an agent land only while it holds the
agent's lease with its token, checked in the writer's batch transaction."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy.engine import Connection

from agentdeck.core.agent import AgentState
from agentdeck.core.hosts import Host
from agentdeck.errors import Fenced, Refused, UsageError
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore
from tests.store.conftest import Collector, db_rows, make_agent, text

pytestmark = pytest.mark.anyio


async def _leased(store: Store, *agent_ids: str, host: str = "h1") -> dict[str, int]:
    """Register ``host``, save the agents and claim them: agent → token."""
    hs = HostStore(store)
    await hs.register(Host(host, capacity=10))
    for agent_id in agent_ids:
        await store.save_agent(make_agent(agent_id))
    return {x.agent_id: x.token for x in await hs.claim(host, list(agent_ids))}


def _age(store: Store, agent_id: str) -> None:
    """As if the lease's holder had not heartbeaten for 100 s."""
    db_rows(
        store, "UPDATE leases SET expires_at = expires_at - 100 WHERE agent_id = ?", (agent_id,)
    )


def _count(store: Store, agent_id: str) -> int:
    return int(db_rows(store, "SELECT count(*) FROM events WHERE agent_id = ?", (agent_id,))[0][0])


async def test_a_host_that_holds_the_lease_writes(store: Store) -> None:
    tokens = await _leased(store, "a1")
    store.fence_as("h1")
    store.fence("a1", tokens["a1"])
    stored = await store.record(
        [text("a1", 1), text("a1", 2)], make_agent("a1", state=AgentState.IDLE)
    )
    assert [e.agent_id for e in stored] == ["a1", "a1"]
    assert _count(store, "a1") == 2
    assert (await store.get_agent("a1")).state is AgentState.IDLE


async def test_an_expired_lease_is_refused_and_nothing_of_it_is_written(store: Store) -> None:
    tokens = await _leased(store, "a1")
    store.fence_as("h1")
    store.fence("a1", tokens["a1"])
    await store.append([text("a1", 1)])
    _age(store, "a1")  # the host paused past its lease
    with pytest.raises(Fenced) as caught:
        await store.record([text("a1", 2)], make_agent("a1", state=AgentState.DONE))
    err = caught.value
    assert isinstance(err, Refused) and err.http_status == 409
    assert (err.host, err.agent_id, err.token) == ("h1", "a1", tokens["a1"])
    assert str(err).startswith(
        f"runner host h1 no longer holds agent a1's lease (token {tokens['a1']}): "
        "its write was refused"
    )
    with pytest.raises(Fenced):
        await store.save_agent(make_agent("a1", state=AgentState.DONE))
    assert _count(store, "a1") == 1
    assert (await store.get_agent("a1")).state is AgentState.RUNNING
    await store.append([text("other", 1)])  # the writer goes on
    assert _count(store, "other") == 1


async def test_a_lease_claimed_by_another_host_is_refused_to_the_old_one(
    store: Store, target: object
) -> None:
    tokens = await _leased(store, "a1")
    store.fence_as("h1")
    store.fence("a1", tokens["a1"])
    _age(store, "a1")
    hs = HostStore(store)
    await hs.register(Host("h2", capacity=1))
    (lease,) = await hs.claim("h2", ["a1"])
    assert lease.token == tokens["a1"] + 1
    with pytest.raises(Fenced, match="runner host h1 no longer holds agent a1's lease"):
        await store.append([text("a1", 1)])
    async with Store.open(target) as other:  # type: ignore[arg-type]
        other.fence_as("h2")
        other.fence("a1", lease.token)
        await other.append([text("a1", 2)])  # the new holder writes
    (event,) = await store.read(agent_id="a1")
    assert event.data["text"] == "msg 2"


async def test_in_one_batch_the_held_agent_lands_and_the_fenced_one_does_not(
    store: Store,
) -> None:
    tokens = await _leased(store, "held", "lost")
    store.fence_as("h1")
    store.fence("held", tokens["held"])
    store.fence("lost", tokens["lost"])
    _age(store, "lost")
    seen = Collector()
    store.subscribe(seen)
    gate = threading.Event()

    def blocked(_: Connection) -> None:  # the writer waits here: both queue behind it
        assert gate.wait(10)

    first = store._writer.queue(op=blocked)
    held = asyncio.ensure_future(store.append([text("held", 1), text("held", 2)]))
    lost = asyncio.ensure_future(store.append([text("lost", 1)]))
    free = asyncio.ensure_future(store.append([text("free", 1)]))
    await asyncio.sleep(0.05)  # the three are queued (the futures have run)
    gate.set()
    await first
    done = await asyncio.gather(held, lost, free, return_exceptions=True)
    assert [e.agent_id for e in done[0]] == ["held", "held"]  # type: ignore[union-attr]
    assert isinstance(done[1], Fenced) and done[1].agent_id == "lost"
    assert [e.agent_id for e in done[2]] == ["free"]  # type: ignore[union-attr]
    assert (_count(store, "held"), _count(store, "lost"), _count(store, "free")) == (2, 0, 1)
    await seen.wait_count(3)
    assert [[e.agent_id for e in b] for b in seen.batches] == [["held", "held", "free"]]


async def test_unfenced_agents_and_operations_are_not_checked(store: Store) -> None:
    tokens = await _leased(store, "a1")
    store.fence_as("h1")
    store.fence("a1", tokens["a1"])
    _age(store, "a1")
    await store.append([text("b1", 1)])  # never fenced
    await store.amend_extra("a1", set_={"note": "x"})  # an operation: not fenced
    assert (await store.get_agent("a1")).extra.get("note") == "x"
    with pytest.raises(Fenced):
        await store.append([text("a1", 1)])
    store.unfence("a1")  # the host let it go: no longer checked
    await store.append([text("a1", 2)])
    assert (_count(store, "a1"), _count(store, "b1")) == (1, 1)


async def test_fencing_needs_a_host_and_a_good_token(store: Store) -> None:
    with pytest.raises(UsageError, match="fence_as"):
        store.fence("a1", 1)
    with pytest.raises(UsageError, match="bad host name"):
        store.fence_as("bad name")
    store.fence_as("h1")
    for token in (0, -1, True, "1"):
        with pytest.raises(UsageError, match="bad lease token"):
            store.fence("a1", token)  # type: ignore[arg-type]
    await store.append([text("a1", 1)])  # nothing was fenced
