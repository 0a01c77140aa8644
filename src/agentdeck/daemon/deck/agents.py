"""The Deck's agents: start, find, list, steer, archive."""

from __future__ import annotations

import time
from dataclasses import replace

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.compaction import compact_text, parse_auto_compact_at
from agentdeck.core.events import Notice
from agentdeck.core.usage import LOCAL_OWNER
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import InvalidState, UsageError
from agentdeck.orchestration.templates import resolve as resolve_template
from agentdeck.runner.steering import ensure_steerable, owned_elsewhere, reconcile_stale


class Agents(DeckParts):
    async def create_agent(
        self,
        spec: AgentSpec,
        *,
        keep_alive: bool = True,
        template: str | None = None,
        background: bool = False,
    ) -> Agent:
        """Start an agent; ``template`` names an agent template, seen from
        ``spec.project`` (or its cwd), whose settings the spec's own override.
        ``background`` (the deck's own callers: webhooks): answered once the agent
        exists (``starting``), its Claude Code booting meanwhile; a failure to start
        is the agent's error."""
        if template:
            from agentdeck.core.templates import apply_template

            found = resolve_template(self.settings, template, spec.project or spec.cwd)
            spec = apply_template(found, spec)
        if spec.output_schema is not None:  # hostile input, from whoever made the spec
            from agentdeck.core.output_schema import resolve_schema

            spec = replace(spec, output_schema=resolve_schema(spec.output_schema))
        parse_auto_compact_at(spec.auto_compact_at)  # a bad value: UsageError, as the API's
        if self._embedded and spec.owner is None:
            spec = replace(spec, owner=LOCAL_OWNER)  # no daemon, no users: the machine's
        return await self._runner.place(
            spec, keep_alive=keep_alive and not self._embedded, background=background
        )

    async def spawn(
        self,
        parent: str,
        prompt: str,
        *,
        template: str = "engineer",
        name: str | None = None,
        workspace: str | None = None,
    ) -> Agent:
        """A child of ``parent`` under the tree's rules (limits, budget, profile)."""
        agent = await self.get_agent(parent)
        return await self._orchestration.spawn(
            agent.id, prompt, template=template, name=name, workspace=workspace
        )

    async def get_agent(self, ref: str) -> Agent:
        """By id or unique prefix; as its live session sees it when it runs here."""
        session = self._runner.sessions.get(ref)
        if session is not None:
            return session.agent
        return self._fresh(await self._store.find_agent(ref))

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
        agents = await self._store.list_agents(
            states=states,
            text=text,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
            parent=parent,
            roots=roots,
        )
        return [self._fresh(a) for a in agents]

    async def children(self, ref: str) -> list[Agent]:
        agent = await self._store.find_agent(ref)
        return await self._orchestration.children(agent.id)

    async def descendants(self, root_ids: list[str], *, limit: int = 10_000) -> list[Agent]:
        return [self._fresh(a) for a in await self._store.descendants(root_ids, limit=limit)]

    async def tree(
        self, *, text: str | None = None, include_archived: bool = False, limit: int = 100
    ) -> list[Agent]:
        roots = await self.list_agents(
            text=text, include_archived=include_archived, limit=limit, roots=True
        )
        return [*roots, *await self.descendants([a.id for a in roots])]

    async def send(self, ref: str, text: str) -> Agent:
        """A follow-up; a finished agent is resumed with it (kept alive by a daemon;
        embedded, its process ends with the turn, as the command that runs it does)."""
        if not text:
            raise UsageError("a message needs text", hint="write the message to send")
        agent = await self._store.find_agent(ref)
        ensure_steerable(agent, "send a message to")
        if self._runner.live(agent.id) is None and not owned_elsewhere(agent):
            if agent.state.is_live:
                agent = await reconcile_stale(self._store, agent)
            session = await self._runner.resume(agent.id, text, keep_alive=not self._embedded)
            return session.agent
        taken = await self._steering.send(agent.id, text)
        return taken if taken is not None else await self.get_agent(agent.id)

    async def compact(self, ref: str, instructions: str | None = None) -> Agent:
        text = compact_text(instructions)
        agent = await self._store.find_agent(ref)
        session = self._runner.live(agent.id)
        if session is not None:  # its own view: the store may still be writing the turn's end
            agent = session.agent
        elif not owned_elsewhere(agent) and agent.state.is_live:
            agent = await reconcile_stale(self._store, agent)
        if agent.state is not AgentState.IDLE:  # a busy one would queue it behind its turn
            raise InvalidState(agent.id, str(agent.state), "compact it (only between turns)")
        taken = await self._steering.send(agent.id, text)
        return taken if taken is not None else await self.get_agent(agent.id)

    async def interrupt(self, ref: str) -> Agent:
        return await self._steering.interrupt(ref)

    async def kill(self, ref: str, *, children: bool = True) -> Agent:
        """Stop the agent; with ``children`` (the default) its whole subtree too."""
        agent = await self._store.find_agent(ref)
        if not children:
            return await self._steering.kill(agent.id)
        return await self._orchestration.kill_tree(agent)

    async def resume(self, ref: str, text: str | None = None, *, fork: bool = False) -> Agent:
        """Continue a finished agent's session with ``text`` (None: ask it to continue);
        kept alive by a daemon, one turn embedded (as ``send``)."""
        if text is not None and not text:
            raise UsageError(
                "a message to resume with needs text", hint="leave it out to ask it to continue"
            )
        session = await self._runner.resume(ref, text, fork=fork, keep_alive=not self._embedded)
        return session.agent

    async def archive(self, ref: str, archived: bool = True) -> Agent:
        agent = await self._store.find_agent(ref)
        if archived and self._runner.live(agent.id) is not None:
            await self._runner.sessions[agent.id].close()
        await self._store.set_archived(agent.id, archived)
        await self._store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="archived" if archived else "restored",
                    message="archived" if archived else "restored from the archive",
                )
            ]
        )
        return await self._store.get_agent(agent.id)
