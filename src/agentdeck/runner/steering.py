"""Steering an agent wherever it lives.

An agent may be supervised by this process, by another agentdeck process (an
``agentdeck run`` in another terminal), or by nobody any more (its supervisor
died). ``Steering`` does the right thing in each case: act locally, queue a
command for the owner and wait until it is taken, or reconcile the stale row.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

from agentdeck.core.agent import Agent, AgentSource, AgentState
from agentdeck.core.events import ErrorOccurred
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.redact import scrub
from agentdeck.errors import AgentdeckError, InvalidState, SecretNotKept, UsageError
from agentdeck.runner import procs
from agentdeck.runner.runner import Runner
from agentdeck.store.queue import end_queued
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)


# The runner host this process runs as, if it does (``runner.hosting``): an agent
# marked with another host's name is that host's to steer (commands through the
# store); the reaper, not a process check, says when that host is gone.
_this_host: str | None = None


def set_this_host(name: str | None) -> None:
    global _this_host
    _this_host = name


def hosted_elsewhere(agent: Agent) -> bool:
    """Whether a runner host other than this process runs (or has claimed) it."""
    host = agent.extra.get("host")
    return (
        host is not None
        and host != _this_host
        and (agent.state.is_live or agent.state is AgentState.QUEUED)
    )


def owned_elsewhere(agent: Agent) -> bool:
    if "host" in agent.extra:
        return hosted_elsewhere(agent)
    if agent.source is AgentSource.EXTERNAL:
        # A hand-started session belongs to its terminal while its process lives.
        return agent.state.is_live and procs.runs_since(agent.pid, agent.updated_at)
    return (
        agent.state.is_live
        and agent.owner_pid is not None
        and agent.owner_pid != os.getpid()
        and procs.runs_since(agent.owner_pid, agent.updated_at)
    )


def supervisor_gone(agent: Agent) -> bool:
    """Whether the agent's row says it runs under another process that ended (killed
    before it could record the end): nobody will answer it until it is reconciled."""
    return (
        agent.state.is_live
        and "host" not in agent.extra  # a host's agents: its leases say (the reaper)
        and agent.source is not AgentSource.EXTERNAL
        and agent.owner_pid is not None
        and agent.owner_pid != os.getpid()
        and not procs.runs_since(agent.owner_pid, agent.updated_at)
    )


def ensure_steerable(agent: Agent, action: str) -> None:
    """Hand-started sessions only report to the deck; their terminal steers them."""
    if agent.source is AgentSource.EXTERNAL:
        raise UsageError(
            f"{agent.id} is a hand-started Claude Code session (source external): "
            f"agentdeck cannot {action} it",
            hint="steer it in the terminal it runs in",
        )


async def _ended_quietly(store: Store, agent: Agent) -> Agent:
    """A hand-started session whose process is gone without a SessionEnd hook:
    it is over. Its process is never ours to stop."""
    now = time.time()
    reason = "its Claude Code process ended without a SessionEnd hook"
    moved = transition(agent, AgentState.DONE, ts=now, reason=reason)
    if moved.refused:
        logger.warning(REFUSALS.note(agent, AgentState.DONE))
        return agent
    updated = moved.agent.with_changes(pid=None, current_tool=None, updated_at=now)
    await store.record(list(moved.events), updated)
    return updated


async def reconcile_stale(
    store: Store, agent: Agent, *, grace: float = 3.0, end: AgentState = AgentState.INTERRUPTED
) -> Agent:
    """A row says live but its supervisor is gone: stop leftovers, and end it
    ``end`` (``interrupted``; ``killed`` for a kill: one change, from the state it
    was left in, as for an agent whose supervisor lives)."""
    if not agent.state.is_live or owned_elsewhere(agent):
        return agent
    if agent.source is AgentSource.EXTERNAL:
        return await _ended_quietly(store, agent)
    carried = procs.carried_id(agent.id, agent.extra)
    await asyncio.to_thread(procs.end_leftover, agent.pid, agent.updated_at, grace, carried)
    if agent.extra.get("sandbox") == "process":
        # Its sandbox's private directory (its /tmp may hold the agent's files),
        # which the dead supervisor did not remove: not left for a later sandbox.
        from agentdeck.sandbox.confine import sweep_stale

        await asyncio.to_thread(sweep_stale)
    now = time.time()
    reason = "its supervising process is gone"
    said = reason if end is AgentState.INTERRUPTED else f"{end} ({reason})"
    moved = transition(agent, end, ts=now, reason=said)
    if moved.refused:
        logger.warning(REFUSALS.note(agent, end))
        return agent
    updated = moved.agent.with_changes(
        pid=None, current_tool=None, updated_at=now, last_error=reason
    )
    await store.record(
        [ErrorOccurred(agent_id=agent.id, ts=now, kind="orphaned", message=reason), *moved.events],
        updated,
    )
    return updated


def supervisor_of(agent: Agent) -> str:
    """Who runs the agent, as a person is told."""
    host = agent.extra.get("host")
    return f"runner host {host}" if host else f"process {agent.owner_pid}"


async def end_unclaimed(store: Store, agent: Agent, end: AgentState) -> Agent | None:
    """A queued agent no host has claimed yet, ended ``end`` (killed, interrupted);
    None when a host claimed it meanwhile (steer it there)."""
    if not await end_queued(store, agent.id, end):
        return None
    now = time.time()
    moved = transition(agent, end, ts=now, reason=f"{end} before a runner host took it")
    updated = moved.agent.with_changes(updated_at=now)
    await store.record(list(moved.events), updated)
    return updated


class Steering:
    def __init__(self, store: Store, runner: Runner, *, ack_timeout: float = 10.0) -> None:
        self.store = store
        self.runner = runner
        self.ack_timeout = ack_timeout

    async def _unqueued(self, agent: Agent, end: AgentState) -> Agent | None:
        """A queued agent ended here, or None once a host has it (read again)."""
        if agent.state is not AgentState.QUEUED:
            return None
        return await end_unclaimed(self.store, agent, end)

    async def interrupt(self, ref: str) -> Agent:
        agent = await self.store.find_agent(ref)
        ensure_steerable(agent, "interrupt")
        ended = await self._unqueued(agent, AgentState.INTERRUPTED)
        if ended is not None:
            return ended
        agent = await self.store.get_agent(agent.id)
        local = self.runner.live(agent.id)
        if local is not None:
            await local.interrupt()
            return local.agent
        if owned_elsewhere(agent):
            return await self._remote(agent, "interrupt", {})
        if agent.state.is_live:
            return await reconcile_stale(self.store, agent)
        raise InvalidState(agent.id, agent.state, "interrupt")

    async def kill(self, ref: str) -> Agent:
        agent = await self.store.find_agent(ref)
        ensure_steerable(agent, "kill")
        ended = await self._unqueued(agent, AgentState.KILLED)
        if ended is not None:
            return ended
        agent = await self.store.get_agent(agent.id)
        local = self.runner.live(agent.id)
        if local is not None:
            await local.kill()
            return local.agent
        if owned_elsewhere(agent):
            return await self._remote(agent, "kill", {}, until=lambda a: a.state.is_final)
        if agent.state.is_live:
            # Its supervisor is gone: it ends killed, as it would have under one
            # (never interrupted first: a final state moves on only by a resume).
            return await reconcile_stale(self.store, agent, end=AgentState.KILLED)
        raise InvalidState(agent.id, agent.state, "kill")

    async def send(self, ref: str, text: str) -> Agent | None:
        """Deliver a follow-up. Returns the agent if another process took it;
        None if it was resumed here (the caller then follows the local session)."""
        agent = await self.store.find_agent(ref)
        ensure_steerable(agent, "send a message to")
        local = self.runner.live(agent.id)
        if local is not None:
            await local.send(text)
            return None
        if agent.state is AgentState.QUEUED and "host" not in agent.extra:
            raise InvalidState(
                agent.id, agent.state, "send a message to it before a runner host takes it"
            )
        if owned_elsewhere(agent):
            if scrub(text) != text:
                # The queue to another process is a table: it never holds a secret,
                # and a redacted message would not be the one that was sent.
                raise SecretNotKept(
                    f"the message holds a secret, and agent {agent.id} is run by "
                    f"{supervisor_of(agent)}: a message to it goes through the database, "
                    "which never holds a secret, so it was not sent",
                    hint="send it where the agent runs (the terminal of its `agentdeck run`, "
                    "or the daemon for agents the daemon runs), or without the secret",
                )
            return await self._remote(agent, "send", {"text": text})
        if agent.state.is_live:
            agent = await reconcile_stale(self.store, agent)
        await self.runner.resume(agent.id, text)
        return None

    async def _remote(
        self,
        agent: Agent,
        kind: str,
        payload: dict[str, object],
        until: Callable[[Agent], bool] | None = None,
    ) -> Agent:
        command_id = await self.store.enqueue_command(agent.id, kind, payload)
        deadline = time.monotonic() + self.ack_timeout
        while time.monotonic() < deadline:
            if await self.store.command_claimed(command_id):
                current = await self.store.get_agent(agent.id)
                if until is None or until(current):
                    return current
            await asyncio.sleep(0.05)
        raise AgentdeckError(
            f"agent {agent.id} is supervised by {supervisor_of(agent)}, "
            f"which did not take the {kind} command within {self.ack_timeout:.0f}s",
            hint="is that process stuck? `agentdeck kill` it or stop that process",
        )
