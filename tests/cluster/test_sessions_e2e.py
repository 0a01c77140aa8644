"""Dashboard logins on a deck with two API nodes (issue 30, item 4): two real
``agentdeck up --no-runner`` on one PostgreSQL database, as behind a load balancer.
A login on node 1 opens the dashboard on node 2; a logout on node 2 ends the
session on node 1 too (within the nodes' recheck time); the database keeps no
session id in clear."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from agentdeck.store.sessions import key_of
from agentdeck.web.auth import COOKIE
from tests.support.cluster import TOKEN, Cluster, Node
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


def browser(node: Node, cookie: str | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=node.url, timeout=30, cookies={COOKIE: cookie} if cookie else None
    )


async def test_a_login_on_one_node_opens_the_dashboard_on_the_other(
    cluster: Cluster, pg_url: str
) -> None:
    one = await cluster.node("one")
    two = await cluster.node("two")
    async with browser(one) as first:
        r = await first.get("/login", params={"token": TOKEN})
        assert r.status_code == 303, r.text
        cookie = str(first.cookies[COOKIE])
        assert (await first.get("/")).status_code == 200
    async with browser(two, cookie) as second:
        page = await second.get("/")
        assert page.status_code == 200, page.text
        assert (await second.get("/api/agents")).status_code == 200

    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://")) as pg:
        rows = pg.execute("SELECT * FROM dashboard_sessions").fetchall()
    assert [r[0] for r in rows] == [key_of(cookie)]
    assert cookie not in repr(rows) and TOKEN not in repr(rows)

    async with browser(two, cookie) as second:
        out = await second.post("/logout", headers={"origin": two.url})
        assert out.status_code == 303
        assert (await second.get("/api/agents")).status_code == 401

    async def ended_on_one() -> bool:
        async with browser(one, cookie) as first:
            return (await first.get("/api/agents")).status_code == 401

    await eventually(ended_on_one, timeout=15, what="the logout on node 2 ending it on node 1")
    async with browser(one, cookie) as first:
        page = await first.get("/")
        assert page.status_code == 401 and "log in" in page.text.lower()
