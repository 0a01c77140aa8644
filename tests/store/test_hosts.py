"""Runner hosts and leases (``store.hosts``), on both backends: registration, claims
with fencing tokens, heartbeats that renew and fence, expiry, and two claimers
racing, each with its own Store, for the same agents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.hosts import Host, Lease
from agentdeck.errors import NotFound, Refused, UsageError
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore
from tests.store.conftest import db_rows, make_agent

pytestmark = pytest.mark.anyio


async def _agents(store: Store, n: int, prefix: str = "ag") -> list[str]:
    ids = [f"{prefix}{i:03d}" for i in range(n)]
    for agent_id in ids:
        await store.save_agent(make_agent(agent_id))
    return ids


def _age(store: Store, agent_id: str, seconds: float = 100.0) -> None:
    """As if the lease's holder had not heartbeaten for ``seconds``."""
    db_rows(
        store,
        "UPDATE leases SET expires_at = expires_at - ? WHERE agent_id = ?",
        (seconds, agent_id),
    )


async def test_a_claim_is_a_lease_with_a_token_and_holds(store: Store) -> None:
    hs = HostStore(store)
    host = await hs.register(Host("h1", hostname="box", pid=7, capacity=4, labels=["gpu"]))
    assert host.epoch == 1 and host.heartbeat_at == host.started_at > 0
    (a,) = await _agents(store, 1)
    (lease,) = await hs.claim("h1", [a])
    assert (lease.agent_id, lease.host, lease.token) == (a, "h1", 1)
    assert lease.expires_at == pytest.approx(lease.claimed_at + 15.0)
    assert await hs.holds("h1", a, 1)
    assert not await hs.holds("h1", a, 2) and not await hs.holds("h2", a, 1)
    assert await hs.claim("h1", [a]) == []  # held: not claimed twice
    assert [x.agent_id for x in await hs.leases("h1")] == [a]
    assert Lease.from_dict(lease.to_dict()) == lease


async def test_claims_stop_at_the_hosts_capacity_and_skip_unknown_agents(store: Store) -> None:
    hs = HostStore(store)
    await hs.register(Host("h1", capacity=3))
    ids = await _agents(store, 5)
    first = await hs.claim("h1", ["nosuch", *ids[:2]], n=10)
    assert [x.agent_id for x in first] == ids[:2]
    second = await hs.claim("h1", ids)
    assert [x.agent_id for x in second] == [ids[2]]  # room for one more only
    assert await hs.claim("h1", ids) == []


async def test_an_expired_lease_is_listed_and_a_new_claim_fences_the_old_holder(
    store: Store,
) -> None:
    hs = HostStore(store)
    await hs.register(Host("h1", capacity=2))
    await hs.register(Host("h2", capacity=2))
    a, b = await _agents(store, 2)
    await hs.claim("h1", [a, b])
    _age(store, a)
    assert [x.agent_id for x in await hs.expired()] == [a]
    (taken,) = await hs.claim("h2", [a, b])  # b is still h1's
    assert (taken.agent_id, taken.host, taken.token) == (a, "h2", 2)
    assert not await hs.holds("h1", a, 1)  # a late write of h1's is refused
    assert await hs.holds("h2", a, 2)
    assert await hs.expired() == []
    assert not await hs.release("h1", a, 1)  # not h1's to release any more
    assert await hs.release("h2", a, 2)
    (again,) = await hs.claim("h1", [a])
    assert again.token == 3  # the token only grows, whoever claims


async def test_a_heartbeat_renews_what_the_host_holds_and_names_what_it_lost(
    store: Store,
) -> None:
    hs = HostStore(store)
    await hs.register(Host("h1", capacity=3))
    await hs.register(Host("h2", capacity=3))
    a, b, c = await _agents(store, 3)
    leases = {x.agent_id: x.token for x in await hs.claim("h1", [a, b, c])}
    _age(store, b)  # h1 paused past b's lease: nobody took it yet
    _age(store, c)
    await hs.claim("h2", [c])  # and c went to another host
    before = {x.agent_id: x.expires_at for x in await hs.leases("h1")}
    assert await hs.heartbeat("h1", leases) == [b, c]
    after = {x.agent_id: x.expires_at for x in await hs.leases("h1")}
    assert list(after) == [a] and after[a] >= before[a]
    assert not await hs.holds("h1", b, leases[b])  # an expired lease is not renewed
    assert await hs.heartbeat("h1", {a: leases[a]}) == []
    assert await hs.heartbeat("h1") == [b]  # not saying: its own leases that expired
    hosts, now = await hs.list_hosts()
    assert [h.name for h in hosts] == ["h1", "h2"] and hosts[0].heartbeat_at <= now


async def test_a_host_coming_back_starts_afresh(store: Store) -> None:
    hs = HostStore(store)
    await hs.register(Host("h1", capacity=2, version="1.0"))
    (a,) = await _agents(store, 1)
    (lease,) = await hs.claim("h1", [a])
    back = await hs.register(Host("h1", capacity=5, version="1.1"))
    assert (back.epoch, back.capacity, back.version) == (2, 5, "1.1")
    assert not await hs.holds("h1", a, lease.token)  # its old life's leases are gone
    assert await hs.heartbeat("h1", {a: lease.token}) == [a]
    (new,) = await hs.claim("h1", [a])
    assert new.token == lease.token + 1
    await hs.stop("h1")
    assert await hs.leases() == []
    with pytest.raises(Refused, match="stopped"):
        await hs.heartbeat("h1")
    with pytest.raises(Refused, match="stopped"):
        await hs.claim("h1", [a])


async def test_a_process_whose_host_name_was_registered_again_is_fenced(store: Store) -> None:
    hs = HostStore(store)
    first = await hs.register(Host("h1", capacity=2, pid=100))
    (a, b) = await _agents(store, 2)
    (lease,) = await hs.claim("h1", [a], epoch=first.epoch)
    second = await hs.register(Host("h1", capacity=2, pid=200))  # paused, replaced
    with pytest.raises(Refused, match="registered again"):
        await hs.heartbeat("h1", {a: lease.token}, epoch=first.epoch)
    with pytest.raises(Refused, match="registered again"):
        await hs.claim("h1", [b], epoch=first.epoch)
    assert not await hs.holds("h1", a, lease.token)
    assert await hs.heartbeat("h1", {}, epoch=second.epoch) == []
    assert [x.token for x in await hs.claim("h1", [a, b], epoch=second.epoch)] == [2, 1]


@pytest.mark.parametrize(
    ("host", "says"),
    [
        (Host("h1", capacity=-1), "capacity"),
        (Host("h1", labels=["gpu\x1b[31m"]), "control characters"),
        (Host("h1", labels=["a b"]), "bad label"),
        (Host("bad name"), "bad host name"),
        (Host("h\nx"), "control characters"),
        (Host("h1", project_roots=["relative/dir"]), "absolute"),
        (Host("h1", version="1\r\n"), "control characters"),
    ],
)
async def test_bad_hosts_are_refused_and_nothing_is_written(
    store: Store, host: Host, says: str
) -> None:
    hs = HostStore(store)
    with pytest.raises(UsageError, match=says):
        await hs.register(host)
    assert (await hs.list_hosts())[0] == []


async def test_an_unknown_host_is_a_clear_error(store: Store) -> None:
    hs = HostStore(store)
    (a,) = await _agents(store, 1)
    with pytest.raises(NotFound, match="nosuch"):
        await hs.heartbeat("nosuch")
    with pytest.raises(NotFound, match="nosuch"):
        await hs.claim("nosuch", [a])
    with pytest.raises(NotFound, match="nosuch"):
        await hs.stop("nosuch")
    assert not await hs.holds("nosuch", a, 1)
    await store.save_agent(make_agent("after"))  # the writer goes on writing
    assert (await store.get_agent("after")).id == "after"


async def test_two_claimers_racing_never_both_get_an_agent(
    store: Store, target: Path | str
) -> None:
    ids = await _agents(store, 50)
    await HostStore(store).register(Host("h1", capacity=50))
    await HostStore(store).register(Host("h2", capacity=50))

    async def claimer(name: str) -> list[Lease]:
        async with Store.open(target) as own:
            hs, got = HostStore(own), []
            while True:  # a few at a time, as a host fills up
                claimed = await hs.claim(name, ids, n=3)
                if not claimed:
                    return got
                got += claimed

    one, two = await asyncio.gather(claimer("h1"), claimer("h2"))
    a, b = {x.agent_id for x in one}, {x.agent_id for x in two}
    assert a & b == set()
    assert a | b == set(ids)
    assert {x.token for x in one + two} == {1}
    live = await HostStore(store).leases()
    assert {(x.agent_id, x.host) for x in live} == {(x.agent_id, x.host) for x in one + two}


def test_the_lease_must_outlast_two_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentdeck.errors import ConfigError

    monkeypatch.setenv("AGENTDECK_RUNNER_HEARTBEAT_SECONDS", "5")
    monkeypatch.setenv("AGENTDECK_RUNNER_LEASE_SECONDS", "8")
    with pytest.raises(ConfigError, match="AGENTDECK_RUNNER_LEASE_SECONDS"):
        Settings.load()
    monkeypatch.setenv("AGENTDECK_RUNNER_LEASE_SECONDS", "-1")
    with pytest.raises(ConfigError, match="AGENTDECK_RUNNER_LEASE_SECONDS"):
        Settings.load()
    with pytest.raises(UsageError):
        HostStore(None, heartbeat_seconds=5, lease_seconds=5)  # type: ignore[arg-type]
