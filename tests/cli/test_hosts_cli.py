"""``agentdeck hosts``, run as a user would (a real subprocess), on SQLite and on
PostgreSQL: none registered, then two hosts, one holding a lease, one stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.hosts import Host
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore
from tests.support.deckcli import deck, deck_env


@pytest.fixture(params=["sqlite", "postgres"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[dict[str, str], Path | str]:
    if request.param == "postgres":
        url = str(request.getfixturevalue("pg_url"))
        return deck_env(tmp_path, AGENTDECK_DATABASE_URL=url), url
    return deck_env(tmp_path), tmp_path / "home" / "agentdeck.db"


def fill(target: Path | str) -> None:
    async def go() -> None:
        async with Store.open(target) as store:
            hs = HostStore(store)
            await hs.register(Host("alpha", version="0.9", capacity=4, labels=["gpu", "eu"]))
            await hs.register(Host("beta", capacity=2))
            agent = Agent(
                id="ag1",
                name="one",
                state=AgentState.RUNNING,
                spec=AgentSpec(prompt="p"),
                cwd="/tmp",
                created_at=1.0,
                updated_at=1.0,
            )
            await store.save_agent(agent)
            await hs.claim("alpha", ["ag1"])
            await hs.stop("beta")

    asyncio.run(go())


def test_hosts_lists_each_with_its_leases_and_heartbeat(
    setup: tuple[dict[str, str], Path | str],
) -> None:
    env, target = setup
    done = deck(env, "hosts")
    assert done.code == 0, done.err
    assert done.out.strip() == "no runner hosts have registered (`agentdeck runner` starts one)"
    assert deck(env, "hosts", "--json").json() == []
    fill(target)
    done = deck(env, "hosts")
    assert done.code == 0, done.err
    head, alpha, beta = done.out.strip().splitlines()
    assert head.split() == ["NAME", "VERSION", "CAPACITY", "LIVE", "LABELS", "HEARTBEAT"]
    assert alpha.split()[:5] == ["alpha", "0.9", "4", "1", "gpu,eu"]
    assert alpha.endswith("s ago")
    assert beta.split() == ["beta", "-", "2", "0", "-", "stopped"]
    data = deck(env, "hosts", "--json").json()
    assert [(h["name"], h["live_leases"], h["labels"]) for h in data] == [
        ("alpha", 1, ["gpu", "eu"]),
        ("beta", 0, []),
    ]
    assert data[0]["heartbeat_age_seconds"] >= 0 and data[1]["stopped_at"] is not None
