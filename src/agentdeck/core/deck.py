"""The Deck interface: every operation a client (the CLI, the TUI, a bridge, an MCP
server) needs of the deck, whether it runs in this process or behind a daemon.

Two implementations satisfy it structurally: the daemon's ``Deck``
(``agentdeck.daemon.deck``, in-process: today's embedded mode) and ``RemoteDeck``
(``agentdeck.client.deck``, the daemon's HTTP API). Both answer with the same core
records (``Agent``, ``StoredEvent``, ``Approval``, ``Ask``) and raise the same
error classes (``agentdeck.errors``: ``NotFound`` for an unknown ref,
``InvalidState`` for a steer the agent's state refuses); the contract test
(``tests/contract``) runs one suite of operations against both.

Pure typing: it imports only core, so any client may import it cheaply.

Who acts is not an argument: the implementation knows it (the token's user behind
the API, the local user in-process), so a caller cannot claim to be someone else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.events import StoredEvent


class Deck(Protocol):
    """The deck as a client sees it. ``ref`` is an agent's id, a unique id prefix
    or a unique name (an approval's or an ask's id for those)."""

    # -- agents -----------------------------------------------------------------------

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

    async def get_agent(self, ref: str) -> Agent:
        """One agent (``NotFound`` if no agent answers to ``ref``)."""
        ...

    async def send(self, ref: str, text: str) -> Agent:
        """A follow-up; a finished agent is resumed with it (kept alive)."""
        ...

    async def interrupt(self, ref: str) -> Agent:
        """Stop the current turn (``InvalidState`` if the agent runs none)."""
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

    # -- the event log ----------------------------------------------------------------

    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        """Committed events with an id above ``after``, oldest first (one agent's
        when ``agent_id`` is given)."""
        ...

    async def events_before(
        self, *, agent_id: str | None = None, before: int | None = None, limit: int = 200
    ) -> list[StoredEvent]:
        """The newest ``limit`` events with ``id < before`` (all when None), oldest
        first: a long log paged backwards from its end."""
        ...

    async def last_event_id(self) -> int:
        """The id of the last committed event (0 for an empty log)."""
        ...

    def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """Events after ``after``, then live, in batches, until the deck stops.
        ``heartbeat`` is how often an in-process follower gets an empty batch in
        silence (a remote one may get none). A follower that fell too far behind
        gets ``core.ports.SubscriptionDropped`` with the id to resume from."""
        ...

    # -- approvals: the tool calls the policy asks a person about -------------------

    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Requests in ``states`` (None: every state), of one agent if given."""
        ...

    async def approval(self, ref: str) -> Approval: ...

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        """``allow`` or ``deny`` a pending request; ``message`` goes to the agent,
        ``remember`` keeps the answer as a grant (``InvalidState`` if it was
        already answered)."""
        ...

    # -- asks: the questions workers put to a person or their orchestrator -----------

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        """Questions in ``states`` (None: every state), asked by one agent if given."""
        ...

    async def ask(self, ref: str) -> Ask: ...

    async def answer_ask(self, ref: str, answer: str) -> Ask:
        """Answer a worker's question; the worker goes on with it."""
        ...
