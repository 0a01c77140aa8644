"""What becomes of the agents of a runner host that is lost or stops.

A lost host (its leases expired: killed, stopped past its lease, cut off) is
found by any host's reaper (``Reaper.reap``, one winner per lease): its agents
are ``interrupted`` with the reason ("runner host H lost"), their approvals and
asks stay answerable, and those created with ``resume_on_restart`` are queued
again (``requeued``) for another host to resume from their Claude session — the
transcript kept in the database (``runner.transcripts``). A host that starts
again under its name finds its earlier life's agents so (``take_back``); one
that stops cleanly hands on those it suspended (``hand_on``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import ErrorOccurred, Event
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.runner.queueing import REQUEUED
from agentdeck.store import listen
from agentdeck.store.hosts import HostStore
from agentdeck.store.queue import hosted_live
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

_HOSTED = ("host", "lease", "resume_at_start")


class Reaper:
    def __init__(
        self,
        store: Store,
        hosts: HostStore,
        *,
        own: tuple[str, Callable[[str], Awaitable[None]]] | None = None,
    ) -> None:
        """``own``: the runner host this reaper runs on, and how it lets go of an
        agent whose lease it finds its own host lost (its process stopped, its
        writes no longer fenced by the lease reaped): the agent's end is then
        written by this host's store."""
        self.store = store
        self.hosts = hosts
        self.own = own

    async def reap(self) -> list[Agent]:
        """End the agents whose host's lease expired (those this reaper won)."""
        ended = []
        for lease in await self.hosts.expired():
            if not await self.hosts.reap(lease):
                continue  # another reaper won it, or the host came back in time
            agent = await self.store.get_agent(lease.agent_id)
            if agent.extra.get("host") != lease.host or agent.extra.get("lease") != lease.token:
                continue  # claimed but never started there: it is still queued
            if self.own is not None and lease.host == self.own[0]:
                await self.own[1](agent.id)  # this host was the one lost (stopped, cut off)
            ended.append(await self.lost(agent, f"runner host {lease.host} lost"))
        return ended

    async def take_back(self, host: str) -> list[Agent]:
        """What an earlier life of ``host`` left live: lost (its process is gone)."""
        return [
            await self.lost(agent, f"runner host {host} restarted")
            for agent in await hosted_live(self.store, host)
        ]

    async def hand_on(self, host: str, ran: Collection[str]) -> list[Agent]:
        """After a clean stop: the agents of ``ran`` it suspended mid-turn, or that
        were asked to survive a restart, are queued for another host."""
        out = []
        for agent_id in ran:
            agent = await self.store.get_agent(agent_id)
            if agent.extra.get("host") != host or agent.state is not AgentState.INTERRUPTED:
                continue
            busy = bool(agent.extra.get("resume_at_start"))
            if busy or agent.spec.resume_on_restart:
                out.append(await self._requeue(agent, busy=busy, why=f"runner host {host} stopped"))
        return out

    async def lost(self, agent: Agent, reason: str) -> Agent:
        """``agent``'s host is gone: interrupted, saying so; queued again for a
        resume when it asked to survive restarts and had a Claude session."""
        if not agent.state.is_live:
            return agent
        busy = agent.state is not AgentState.IDLE
        now = time.time()
        moved = transition(agent, AgentState.INTERRUPTED, ts=now, reason=reason)
        if moved.refused:
            logger.warning(REFUSALS.note(agent, AgentState.INTERRUPTED))
            return agent
        extra = {k: v for k, v in agent.extra.items() if k not in _HOSTED}
        ended = moved.agent.with_changes(
            pid=None, current_tool=None, updated_at=now, last_error=reason, extra=extra
        )
        said: list[Event] = [
            ErrorOccurred(agent_id=agent.id, ts=now, kind="host_lost", message=reason)
        ]
        await self.store.record([*said, *moved.events], ended)
        logger.warning("agent %s: %s", agent.id, reason)
        if agent.spec.resume_on_restart:
            return await self._requeue(ended, busy=busy, why=reason)
        return ended

    async def _requeue(self, agent: Agent, *, busy: bool, why: str) -> Agent:
        # Without a Claude session it is given its first prompt again (``_fresh``).
        now = time.time()
        moved = transition(agent, AgentState.QUEUED, ts=now, reason=f"{why}: to be resumed")
        if moved.refused:
            logger.warning(REFUSALS.note(agent, AgentState.QUEUED))
            return agent
        extra = {k: v for k, v in agent.extra.items() if k not in _HOSTED}
        extra[REQUEUED] = {"busy": busy}
        queued = moved.agent.with_changes(updated_at=now, extra=extra)
        await self.store.record(list(moved.events), queued)
        await self.store.notify(listen.QUEUE, agent.id)
        return queued
