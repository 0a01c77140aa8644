"""The Deck interface's agents: start, list, steer, archive."""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.agent import Agent, AgentSpec, AgentState


class AgentOps(Protocol):
    """Agents: ``ref`` is an agent's id, a unique id prefix or a unique name."""

    async def create_agent(
        self, spec: AgentSpec, *, keep_alive: bool = True, template: str | None = None
    ) -> Agent:
        """Start an agent (``agentdeck run``); ``template`` names an agent template
        whose settings the spec's own override. The agent is returned starting."""
        ...

    async def list_agents(
        self,
        *,
        states: list[AgentState] | None = None,
        text: str | None = None,
        include_archived: bool = False,
        limit: int = 100,
        offset: int = 0,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Agent]:
        """Agents, newest first: only ``states`` (None: all), with ``text`` in their
        name, id, cwd or spec, the children of the agent id ``parent``, or only
        those without a parent (``roots``)."""
        ...

    async def tree(
        self, *, text: str | None = None, include_archived: bool = False, limit: int = 100
    ) -> list[Agent]:
        """Agents without a parent (newest first, at most ``limit``, with ``text`` in
        their name, id, cwd or spec), then every agent below them: the board."""
        ...

    async def get_agent(self, ref: str) -> Agent:
        """One agent (``NotFound`` if no agent answers to ``ref``)."""
        ...

    async def send(self, ref: str, text: str) -> Agent:
        """A follow-up; a finished agent is resumed with it (kept alive)."""
        ...

    async def compact(self, ref: str, instructions: str | None = None) -> Agent:
        """Send Claude Code's ``/compact`` to an idle agent (``instructions``: what the
        summary should keep, one line; ``UsageError`` otherwise); ``InvalidState``
        unless it is idle. The compaction is a ``compact_boundary`` notice in its log
        (``core.compaction``)."""
        ...

    async def interrupt(self, ref: str) -> Agent:
        """Stop the current turn (an idle agent has none: nothing changes);
        ``InvalidState`` for an agent that has ended."""
        ...

    async def kill(self, ref: str, *, children: bool = True) -> Agent:
        """Stop the agent; with ``children`` its whole subtree too (``InvalidState``
        if it has already ended)."""
        ...

    async def resume(self, ref: str, text: str | None = None, *, fork: bool = False) -> Agent:
        """Continue a finished agent's session (``fork``: into a new agent)."""
        ...

    async def archive(self, ref: str, archived: bool = True) -> Agent:
        """Archive the agent (stopping it if it runs), or restore it."""
        ...

    async def upload(self, ref: str, name: str, data: bytes) -> str:
        """Save ``data`` under ``uploads/`` in the agent's workspace (a taken name gets
        a number, a name with a path in it is refused); the path it got there."""
        ...
