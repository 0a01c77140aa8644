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
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)


def owned_elsewhere(agent: Agent) -> bool:
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
    await asyncio.to_thread(procs.end_leftover, agent.pid, agent.updated_at, grace, agent.id)
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


class Steering:
    def __init__(self, store: Store, runner: Runner, *, ack_timeout: float = 10.0) -> None:
        self.store = store
        self.runner = runner
        self.ack_timeout = ack_timeout

    async def interrupt(self, ref: str) -> Agent:
        agent = await self.store.find_agent(ref)
        ensure_steerable(agent, "interrupt")
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
        if owned_elsewhere(agent):
            if scrub(text) != text:
                # The queue to another process is a table: it never holds a secret,
                # and a redacted message would not be the one that was sent.
                raise SecretNotKept(
                    f"the message holds a secret, and agent {agent.id} is run by another "
                    f"process ({agent.owner_pid}): a message to it goes through the database, "
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
            f"agent {agent.id} is supervised by process {agent.owner_pid}, "
            f"which did not take the {kind} command within {self.ack_timeout:.0f}s",
            hint="is that process stuck? `agentdeck kill` it or stop that process",
        )
