"""Fenced writes: the writer refuses a runner host's late writes for an agent.

A store that writes as runner host H (``Fences.fence_as``) is told which agents
it runs and with which lease token (``fence``). From then on every write for such
an agent (its events, its row) needs H to hold that agent's lease with that token
at commit time: in the writer's batch transaction, under the store's write lock,
ONE query reads the leases of the fenced agents present in the batch (host, token,
not released, not expired by the database's clock); the items of agents H no
longer holds are left out of the batch and fail with ``Fenced``, the rest commits.
A batch that holds no fenced agent costs nothing (no query), and neither does a
store that fences none. Operations (``WorkItem.op``: arbitrary writes such as a
lease's claim or release) are not fenced.

The fence table is swapped whole (never changed in place), so the writer thread
reads a consistent copy without a lock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from agentdeck.core.hosts import check_name
from agentdeck.errors import Fenced, UsageError
from agentdeck.store.work import WorkItem


class Fences:
    def __init__(self) -> None:
        self.host: str | None = None
        self._tokens: Mapping[str, int] = {}

    def fence_as(self, host: str) -> None:
        """This store writes as runner host ``host`` (its fences name it)."""
        self.host = check_name(host)

    def fence(self, agent_id: str, token: int) -> None:
        if self.host is None:
            raise UsageError(
                f"cannot fence agent {agent_id}: the store writes as no runner host",
                hint="call fence_as(host) first",
            )
        if not isinstance(token, int) or isinstance(token, bool) or token < 1:
            raise UsageError(f"bad lease token {token!r} for agent {agent_id}")
        self._tokens = {**self._tokens, agent_id: token}

    def unfence(self, agent_id: str) -> None:
        if agent_id in self._tokens:
            self._tokens = {k: v for k, v in self._tokens.items() if k != agent_id}

    @property
    def tokens(self) -> Mapping[str, int]:
        return self._tokens

    def refused(self, conn: Connection, batch: Sequence[WorkItem]) -> dict[WorkItem, Fenced]:
        """The items of ``batch`` whose fenced agents the host no longer holds, each
        with its error. Runs inside the batch's transaction (after its write lock)."""
        tokens, host = self._tokens, self.host
        if not tokens or host is None:
            return {}
        touched: dict[WorkItem, set[str]] = {}
        for item in batch:
            if item.op is not None:
                continue
            ids = {str(r.get("agent_id")) for r in item.event_rows if r.get("agent_id") in tokens}
            ids.update(str(r.get("id")) for r in item.agent_rows if r.get("id") in tokens)
            if ids:
                touched[item] = ids
        if not touched:
            return {}
        wanted = {a: tokens[a] for ids in touched.values() for a in ids}
        held = _held(conn, host, wanted)
        refused: dict[WorkItem, Fenced] = {}
        for item, ids in touched.items():
            lost = sorted(ids - held)
            if lost:
                refused[item] = Fenced(host, lost[0], wanted[lost[0]])
        return refused


def _held(conn: Connection, host: str, wanted: Mapping[str, int]) -> set[str]:
    """Of ``wanted`` (agent → token), the agents ``host`` holds with that token now,
    by the database's clock (the process's on SQLite, one machine). One query, in
    the driver's SQL: SQLAlchemy's compilation would cost ten times the query."""
    agents = list(wanted)
    rows: Any
    if conn.dialect.name == "postgresql":
        rows = conn.exec_driver_sql(
            "SELECT agent_id, token FROM leases WHERE host = %s AND released_at IS NULL"
            " AND expires_at > extract(epoch FROM clock_timestamp()) AND agent_id = ANY(%s)",
            (host, agents),
        )
    else:
        rows = conn.exec_driver_sql(
            "SELECT agent_id, token FROM leases WHERE host = ? AND released_at IS NULL"
            f" AND expires_at > ? AND agent_id IN ({', '.join('?' * len(agents))})",
            (host, time.time(), *agents),
        )
    return {agent_id for agent_id, token in rows if wanted.get(agent_id) == token}
