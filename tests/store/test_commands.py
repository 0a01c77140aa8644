from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.ports import Command
from agentdeck.errors import NotFound
from agentdeck.store import Store

pytestmark = pytest.mark.anyio


async def test_enqueue_then_claim_once(store: Store) -> None:
    first = await store.enqueue_command("a1", "send", {"text": "hello"})
    second = await store.enqueue_command("a1", "interrupt", {})
    other = await store.enqueue_command("a2", "kill", {})
    assert first < second < other
    assert not await store.command_claimed(first)

    claimed = await store.claim_commands(["a1"], "proc-1")
    assert [(c.id, c.kind, c.payload) for c in claimed] == [
        (first, "send", {"text": "hello"}),
        (second, "interrupt", {}),
    ]
    assert all(c.claimed_by == "proc-1" and c.claimed_at for c in claimed)
    assert await store.command_claimed(first)
    assert await store.claim_commands(["a1"], "proc-2") == []
    assert await store.claim_commands([], "proc-2") == []
    assert [c.id for c in await store.claim_commands(["a1", "a2"], "proc-2")] == [other]
    assert [c.claimed_by for c in await store.list_commands("a1")] == ["proc-1", "proc-1"]
    with pytest.raises(NotFound):
        await store.command_claimed(999)


async def test_two_claimers_on_one_database_never_share_a_command(target: Path | str) -> None:
    """Two stores = two write connections, as two processes would have."""
    a, b = Store.open(target), Store.open(target)
    claims: dict[str, list[Command]] = {"a": [], "b": []}
    total = 120
    try:

        async def claimer(name: str, store: Store) -> None:
            while sum(len(c) for c in claims.values()) < total:
                claims[name] += await store.claim_commands(["x", "y"], name)
                await asyncio.sleep(0)  # yield to the producer

        async def producer() -> None:
            for i in range(total):
                await (a if i % 2 else b).enqueue_command("x" if i % 3 else "y", "send", {"i": i})

        async with asyncio.timeout(60), asyncio.TaskGroup() as tg:
            tg.create_task(producer())
            tg.create_task(claimer("a", a))
            tg.create_task(claimer("b", b))
    finally:
        await a.close()
        await b.close()

    ids_a = {c.id for c in claims["a"]}
    ids_b = {c.id for c in claims["b"]}
    assert not ids_a & ids_b
    assert len(ids_a | ids_b) == total
    assert claims["a"] and claims["b"]  # both really took part
    async with Store.open(target) as store:
        stored = await store.list_commands("x") + await store.list_commands("y")
    assert {c.id: c.claimed_by for c in stored} == {
        **{i: "a" for i in ids_a},
        **{i: "b" for i in ids_b},
    }
