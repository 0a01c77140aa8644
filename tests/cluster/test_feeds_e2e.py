"""The live feed of a deck on several machines (issue 30, items 4 and 8):

- a client following node 1's event stream while node 1 is killed (-9) goes on
  from node 2 with ``Last-Event-ID`` and misses nothing that a host wrote;
- a PostgreSQL restart while an agent works on a host: the host, the node and
  the follower reconnect, the agent finishes, no event is lost or doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

import httpx
import pytest

from agentdeck.client.sse import EventStreamReader
from tests.support.cluster import TOKEN, Cluster, Node, api
from tests.support.pgcluster import PgCluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


class Follower:
    """An SSE client of the deck that moves to another node when its node dies."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.last: str | None = None
        self.reconnects = 0

    async def follow(self, nodes: list[Node], stop: asyncio.Event) -> None:
        turn = 0
        while not stop.is_set():
            node = nodes[turn % len(nodes)]
            headers = {"Authorization": f"Bearer {TOKEN}"}
            headers["Last-Event-ID"] = self.last or "0"
            try:
                async with (
                    httpx.AsyncClient(base_url=node.url, timeout=None) as client,
                    client.stream("GET", "/api/events/stream", headers=headers) as answer,
                ):
                    reader = EventStreamReader()
                    async for chunk in answer.aiter_bytes():
                        for event in reader.feed(chunk):
                            if event.id is not None:
                                self.ids.append(int(event.id))
                                self.last = event.id
                        if stop.is_set():
                            return
            except (httpx.HTTPError, OSError):
                pass
            self.reconnects += 1
            turn += 1
            # A client's reconnection delay, cut short when the test is done.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.2)


async def all_ids(node: Node) -> list[int]:
    async with api(node) as client:
        ids: list[int] = []
        after = 0
        while True:
            page = (await client.get("/api/events", params={"after": after, "limit": 500})).json()
            batch = [int(e["id"]) for e in page["events"]]
            if not batch:
                return ids
            ids += batch
            after = batch[-1]


async def agent_of(node: Node, agent_id: str) -> dict[str, Any]:
    async with api(node) as client:
        return dict((await client.get(f"/api/agents/{agent_id}")).json())


async def test_a_follower_of_a_killed_node_goes_on_from_the_other_and_misses_nothing(
    cluster: Cluster,
) -> None:
    one = await cluster.node("node1")
    two = await cluster.node("node2")
    await cluster.host("hostA", "--capacity", "4")
    follower = Follower()
    stop = asyncio.Event()
    following = asyncio.create_task(follower.follow([one, two], stop))
    try:
        async with api(two) as client:
            made = [
                (
                    await client.post("/api/agents", json={"prompt": f"hi {n}", "scenario": "chat"})
                ).json()["id"]
                for n in range(2)
            ]

            async def some() -> bool:
                return len(follower.ids) >= 4

            await eventually(some, timeout=60, what="events on node 1's stream")
            assert one.proc is not None
            one.proc.send_signal(signal.SIGKILL)
            one.proc.wait(timeout=10)
            more = [
                (
                    await client.post("/api/agents", json={"prompt": f"hi {n}", "scenario": "chat"})
                ).json()["id"]
                for n in range(2, 4)
            ]

            async def settled() -> bool:
                states = [(await agent_of(two, a))["state"] for a in made + more]
                return all(s == "idle" for s in states)

            await eventually(settled, timeout=120, what="the four agents' turns")
        every = await all_ids(two)

        async def caught_up() -> bool:
            return bool(follower.ids) and follower.ids[-1] >= every[-1]

        await eventually(caught_up, timeout=30, what="the follower to catch up on node 2")
    finally:
        stop.set()
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
    assert follower.reconnects >= 1
    assert follower.ids == sorted(set(follower.ids))  # in order, none twice
    assert [i for i in every if i <= follower.ids[-1]] == follower.ids  # none missed


async def test_a_postgresql_restart_loses_nothing(cluster: Cluster, pg_cluster: PgCluster) -> None:
    node = await cluster.node("node1")
    # A lease longer than the restart: the host keeps its agent through it.
    host = await cluster.host("hostA", "--capacity", "2", lease=30.0)
    follower = Follower()
    stop = asyncio.Event()
    following = asyncio.create_task(follower.follow([node], stop))
    try:
        async with api(node) as client:
            first = (
                await client.post("/api/agents", json={"prompt": "hi", "scenario": "chat"})
            ).json()["id"]

            async def idle(agent_id: str) -> bool:
                return (await agent_of(node, agent_id))["state"] == "idle"

            await eventually(lambda: idle(first), timeout=90, what="the first agent's turn")
        await asyncio.to_thread(pg_cluster.restart)
        async with api(node) as client:

            async def made_again() -> str | None:
                answer = await client.post(
                    "/api/agents", json={"prompt": "again", "scenario": "chat"}
                )
                return str(answer.json()["id"]) if answer.status_code == 201 else None

            second = await eventually(made_again, timeout=60, what="the node to write again")
            await eventually(lambda: idle(second), timeout=90, what="the second agent's turn")
            sent = await client.post(f"/api/agents/{first}/messages", json={"text": "still there?"})
            assert sent.status_code == 200, sent.text

            async def answered() -> bool:
                agent = await agent_of(node, first)
                return agent["state"] == "idle" and agent["turns"] >= 2

            await eventually(answered, timeout=90, what="the first agent's second turn")
        every = await all_ids(node)

        async def caught_up() -> bool:
            return bool(follower.ids) and follower.ids[-1] >= every[-1]

        await eventually(caught_up, timeout=30, what="the follower to catch up")
    finally:
        stop.set()
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
    assert follower.ids == every  # none lost, none twice
    assert "fenced" not in host.output()
