"""Runner hosts and their leases in the store (the tables of migration 0011).

A host ``register``s (a host coming back gets a fresh start: a new ``epoch``,
and the leases of its previous life are released, for it runs none of them
now), ``heartbeat``s every ``runner_heartbeat_seconds``, and ``claim``s agents:
each claimed agent gets a lease for ``runner_lease_seconds`` with a fencing
token one more than the agent's last. A heartbeat renews every lease the host
still holds in the same transaction and names those it no longer holds (expired,
or claimed by another host since): the host is fenced from them and must stop
their processes. Before it writes for an agent a host asks ``holds``; a stale
token is refused.

Times are the database's clock (PostgreSQL's ``clock_timestamp()``, read once
the write lock is held), never the caller's: hosts' clocks differ. SQLite is one
machine, its clock is the process's. Claims are serialised by the store's write
lock (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory lock), and on
PostgreSQL the lease rows are taken ``FOR UPDATE SKIP LOCKED`` besides, so two
claimers never both get an agent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.hosts import Host, Lease, check_name
from agentdeck.errors import NotFound, Refused, UsageError
from agentdeck.settings import Settings
from agentdeck.store.schema import agents, hosts, leases
from agentdeck.store.store import Store

HEARTBEAT_SECONDS = 5.0
LEASE_SECONDS = 15.0
_HINT = "`agentdeck hosts` lists the runner hosts"


def db_now(conn: Connection) -> float:
    """The database's clock, epoch seconds (the process's on SQLite)."""
    if conn.dialect.name == "postgresql":
        return float(
            conn.exec_driver_sql("SELECT extract(epoch FROM clock_timestamp())").scalar_one()
        )
    return time.time()


def _host(row: Any) -> Host:
    return Host.from_dict(dict(row._mapping))


def _lease(row: Any) -> Lease:
    return Lease.from_dict(dict(row._mapping))


def _live(now: float) -> sa.ColumnElement[bool]:
    return sa.and_(leases.c.released_at.is_(None), leases.c.expires_at > now)


class HostStore:
    def __init__(
        self,
        store: Store,
        *,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        if not 0 < heartbeat_seconds < lease_seconds:
            raise UsageError(
                f"a lease of {lease_seconds} s must outlast the heartbeat of {heartbeat_seconds} s"
            )
        self.store = store
        self.heartbeat_seconds = heartbeat_seconds
        self.lease_seconds = lease_seconds

    @classmethod
    def of(cls, store: Store, settings: Settings) -> HostStore:
        """The deck's host store, with the settings' heartbeat and lease."""
        return cls(
            store,
            heartbeat_seconds=settings.runner_heartbeat_seconds,
            lease_seconds=settings.runner_lease_seconds,
        )

    async def register(self, host: Host) -> Host:
        """Upsert ``host`` (checked: ``UsageError`` saying what is wrong) and start
        a new life of it: fresh times, ``epoch`` + 1, the leases it held released."""
        host.checked()
        row = host.to_dict()

        def op(conn: Connection) -> Host:
            now = db_now(conn)
            old = conn.execute(sa.select(hosts.c.epoch).where(hosts.c.name == host.name)).first()
            values = {
                **row,
                "started_at": now,
                "heartbeat_at": now,
                "stopped_at": None,
                "epoch": (old.epoch if old is not None else 0) + 1,
            }
            if old is None:
                conn.execute(sa.insert(hosts).values(values))
            else:
                conn.execute(sa.update(hosts).where(hosts.c.name == host.name).values(values))
            _release_all(conn, host.name, now)
            return Host.from_dict(values)

        registered: Host = await self.store._write(op)
        return registered

    async def heartbeat(
        self, name: str, holding: Mapping[str, int] | None = None, *, epoch: int | None = None
    ) -> list[str]:
        """The host is alive: its heartbeat and every lease it still holds renewed,
        in one transaction. ``holding``: the agents the host runs, with the token of
        each; returns those of them it no longer holds (fenced), sorted; without
        ``holding``, the agents whose lease of this host expired. An expired lease
        is never renewed (a reaper marks it lost). ``NotFound`` for a
        host that never registered; ``Refused`` for one that stopped, or when
        ``epoch`` (the life this process registered) is no longer the host's: the
        name was registered again since, and this process is fenced from it all."""
        check_name(name)
        held = dict(holding or {})

        def op(conn: Connection) -> list[str]:
            now = db_now(conn)
            found = conn.execute(
                sa.select(hosts.c.stopped_at, hosts.c.epoch).where(hosts.c.name == name)
            ).first()
            if found is None or found.stopped_at is not None:
                return [_UNKNOWN if found is None else _STOPPED]
            if epoch is not None and found.epoch != epoch:
                return [_STALE]
            conn.execute(sa.update(hosts).where(hosts.c.name == name).values(heartbeat_at=now))
            mine = leases.c.host == name
            if holding is None:  # the host does not say: its leases that expired
                expired = sa.and_(leases.c.released_at.is_(None), leases.c.expires_at <= now)
                lost = conn.execute(sa.select(leases.c.agent_id).where(mine, expired))
                fenced = {r.agent_id for r in lost}
            conn.execute(
                sa.update(leases)
                .where(mine, _live(now))
                .values(renewed_at=now, expires_at=now + self.lease_seconds)
            )
            if holding is not None:
                still = {
                    (r.agent_id, r.token)
                    for r in conn.execute(
                        sa.select(leases.c.agent_id, leases.c.token).where(
                            mine, leases.c.agent_id.in_(list(held)), _live(now)
                        )
                    )
                }
                fenced = {a for a, t in held.items() if (a, t) not in still}
            return sorted(fenced)

        result: list[str] = await self.store._write(op)
        _raise_for(name, result)
        return result

    async def claim(
        self,
        host: str,
        agent_ids: Sequence[str],
        *,
        n: int | None = None,
        epoch: int | None = None,
        queued_only: bool = False,
    ) -> list[Lease]:
        """Leases on up to ``n`` of ``agent_ids`` (in that order) that no host holds
        now, within the host's free capacity; each token is the agent's last + 1.
        Agents the store does not know, and those another host holds, are skipped;
        with ``queued_only``, those no longer queued too (killed meanwhile).
        Errors as ``heartbeat``'s."""
        check_name(host)
        if n is not None and n < 0:
            raise UsageError(f"cannot claim {n} agents")
        wanted = list(dict.fromkeys(agent_ids))

        def op(conn: Connection) -> list[Lease]:
            now = db_now(conn)
            found = conn.execute(
                sa.select(hosts.c.capacity, hosts.c.stopped_at, hosts.c.epoch).where(
                    hosts.c.name == host
                )
            ).first()
            if found is None or found.stopped_at is not None:
                return [_UNKNOWN if found is None else _STOPPED]  # type: ignore[list-item]
            if epoch is not None and found.epoch != epoch:
                return [_STALE]  # type: ignore[list-item]
            busy = conn.execute(
                sa.select(sa.func.count()).where(leases.c.host == host, _live(now))
            ).scalar_one()
            room = max(0, found.capacity - busy)
            room = room if n is None else min(room, n)
            if not room or not wanted:
                return []
            which = sa.select(agents.c.id).where(agents.c.id.in_(wanted))
            if queued_only:
                which = which.where(agents.c.state == "queued")
            known = {r.id for r in conn.execute(which)}
            stmt = sa.select(leases).where(leases.c.agent_id.in_(wanted))
            if conn.dialect.name == "postgresql":
                stmt = stmt.with_for_update(skip_locked=True)
            rows = {r.agent_id: r for r in conn.execute(stmt)}
            exists = {
                r.agent_id
                for r in conn.execute(
                    sa.select(leases.c.agent_id).where(leases.c.agent_id.in_(wanted))
                )
            }
            claimed: list[Lease] = []
            for agent_id in wanted:
                if len(claimed) >= room:
                    break
                if agent_id not in known or (agent_id in exists and agent_id not in rows):
                    continue  # unknown, or locked by a claimer in another transaction
                old = rows.get(agent_id)
                if old is not None and old.released_at is None and old.expires_at > now:
                    continue
                lease = Lease(
                    agent_id=agent_id,
                    host=host,
                    token=(old.token if old is not None else 0) + 1,
                    claimed_at=now,
                    renewed_at=now,
                    expires_at=now + self.lease_seconds,
                )
                values = lease.to_dict()
                if old is None:
                    conn.execute(sa.insert(leases).values(values))
                else:
                    conn.execute(
                        sa.update(leases).where(leases.c.agent_id == agent_id).values(values)
                    )
                claimed.append(lease)
            return claimed

        result: list[Any] = await self.store._write(op)
        if result and isinstance(result[0], str):
            _raise_for(host, result)
        return result

    async def release(self, host: str, agent_id: str, token: int) -> bool:
        """The host is done with the agent; False if it no longer held that lease."""

        def op(conn: Connection) -> bool:
            now = db_now(conn)
            done = conn.execute(
                sa.update(leases)
                .where(
                    leases.c.agent_id == agent_id,
                    leases.c.host == host,
                    leases.c.token == token,
                    leases.c.released_at.is_(None),
                )
                .values(released_at=now)
            )
            return bool(done.rowcount)

        released: bool = await self.store._write(op)
        return released

    async def reap(self, lease: Lease) -> bool:
        """Release ``lease`` as lost if it is still expired and unreleased: True for
        the one reaper (of any host or node) that wins it, False for the others."""

        def op(conn: Connection) -> bool:
            now = db_now(conn)
            done = conn.execute(
                sa.update(leases)
                .where(
                    leases.c.agent_id == lease.agent_id,
                    leases.c.host == lease.host,
                    leases.c.token == lease.token,
                    leases.c.released_at.is_(None),
                    leases.c.expires_at <= now,
                )
                .values(released_at=now)
            )
            return bool(done.rowcount)

        reaped: bool = await self.store._write(op)
        return reaped

    async def stop(self, name: str) -> None:
        """The host stopped cleanly: marked stopped, its leases released."""
        check_name(name)

        def op(conn: Connection) -> bool:
            now = db_now(conn)
            done = conn.execute(sa.update(hosts).where(hosts.c.name == name).values(stopped_at=now))
            _release_all(conn, name, now)
            return bool(done.rowcount)

        if not await self.store._write(op):
            raise NotFound("host", name, hint=_HINT)

    async def holds(self, host: str, agent_id: str, token: int) -> bool:
        """Whether ``host`` holds the agent's lease with ``token`` now: the fence a
        host checks before it writes for the agent."""

        def query(conn: Connection) -> bool:
            now = db_now(conn)
            row = conn.execute(
                sa.select(leases.c.agent_id).where(
                    leases.c.agent_id == agent_id,
                    leases.c.host == host,
                    leases.c.token == token,
                    _live(now),
                )
            ).first()
            return row is not None

        return await self.store._read(query)

    async def expired(self, now: float | None = None) -> list[Lease]:
        """Leases past their expiry and never released (what a reaper marks lost),
        oldest expiry first. ``now``: the database's clock unless given."""

        def query(conn: Connection) -> list[Lease]:
            at = db_now(conn) if now is None else now
            stmt = (
                sa.select(leases)
                .where(leases.c.released_at.is_(None), leases.c.expires_at <= at)
                .order_by(leases.c.expires_at, leases.c.agent_id)
            )
            return [_lease(r) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def leases(self, host: str | None = None) -> list[Lease]:
        """The live leases (of one host, if given), by agent id."""

        def query(conn: Connection) -> list[Lease]:
            stmt = sa.select(leases).where(_live(db_now(conn))).order_by(leases.c.agent_id)
            if host is not None:
                stmt = stmt.where(leases.c.host == host)
            return [_lease(r) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def list_hosts(self) -> tuple[list[Host], float]:
        """Every host by name, and the database's clock now (to age heartbeats by)."""

        def query(conn: Connection) -> tuple[list[Host], float]:
            rows = conn.execute(sa.select(hosts).order_by(hosts.c.name))
            return [_host(r) for r in rows], db_now(conn)

        return await self.store._read(query)


# What an op returns for a host that is not there to take part: raised outside
# the writer, so that the batch it rode in still commits.
_UNKNOWN = "\x00unknown"
_STOPPED = "\x00stopped"
_STALE = "\x00stale"


def _raise_for(name: str, result: Sequence[object]) -> None:
    if result == [_UNKNOWN]:
        raise NotFound("host", name, hint=_HINT + "; a host registers when it starts")
    if result == [_STOPPED]:
        raise Refused(f"runner host {name} stopped", hint="register it again to start it")
    if result == [_STALE]:
        raise Refused(
            f"runner host {name} was registered again since this process registered it: "
            "fenced from all its agents",
            hint="stop their processes; one process per host name",
        )


def _release_all(conn: Connection, name: str, now: float) -> None:
    conn.execute(
        sa.update(leases)
        .where(leases.c.host == name, leases.c.released_at.is_(None))
        .values(released_at=now)
    )
