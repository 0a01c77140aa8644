"""The wire reads (``cli.wire.WireDeck``) over a Deck this command opens, for a
database no read-only look reaches: a PostgreSQL store (``AGENTDECK_DATABASE_URL``)
with no daemon running for the home.

The read commands are synchronous; the Deck is not. The deck lives on an event
loop in a thread of its own for the command's life, and each read is run there
(``asyncio.run_coroutine_threadsafe``). Opening it costs what any command without
a daemon pays (the store, the runner's parts; no Claude Code): the quick path's
look at the SQLite file is what this path has no equivalent of.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from agentdeck.cli import remote_follow

if TYPE_CHECKING:
    from agentdeck.core.events import StoredEvent
    from agentdeck.daemon.deck import Deck
    from agentdeck.settings import Settings

T = TypeVar("T")
Record = dict[str, Any]


class DeckWire:
    """``WireDeck``'s reads answered by a Deck opened in this process."""

    def __init__(self, settings: Settings) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="deck-wire", daemon=True
        )
        self._thread.start()
        try:
            self._deck: Deck = self._run(_open(settings))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def list_agents(
        self,
        *,
        states: Sequence[str] | None = None,
        include_archived: bool = False,
        limit: int = 100,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Record]:
        from agentdeck.core.agent import AgentState

        found = self._run(
            self._deck.list_agents(
                states=[AgentState(s) for s in states] if states else None,
                include_archived=include_archived,
                limit=limit,
                parent=parent,
                roots=roots,
            )
        )
        return [a.to_dict() for a in found]

    def tree(self, *, limit: int = 100) -> list[Record]:
        return [a.to_dict() for a in self._run(self._deck.tree(limit=limit))]

    def get_agent(self, ref: str) -> Record:
        return self._run(self._deck.get_agent(ref)).to_dict()

    def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[Record]:
        found = self._run(self._deck.events(after=after, agent_id=agent_id, limit=limit))
        return [e.to_dict() for e in found]

    def follow(self, *, after: int, agent_id: str, partial: bool = False) -> Iterator[Record]:
        # The text being written lives in the process that runs the agent: none here.
        if self.get_agent(agent_id)["state"] not in remote_follow.UNFINISHED:
            while batch := self.events(after=after, agent_id=agent_id, limit=1000):
                yield from batch
                after = int(batch[-1]["id"])
            return
        feed = self._deck.follow(after=after, agent_id=agent_id, heartbeat=1.0)
        try:
            while True:
                given = self._run(_next(feed))
                if given is None:
                    return  # the deck stopped
                for event in given:
                    record = event.to_dict()
                    yield record
                    if (
                        record["type"] == "state_changed"
                        and record["data"]["new"] in remote_follow.FINAL_STATES
                    ):
                        return
                if not given and self.get_agent(agent_id)["state"] in remote_follow.FINAL_STATES:
                    return  # ended with nothing more to say
        finally:
            closing = getattr(feed, "aclose", None)
            if closing is not None:
                self._run(closing())

    def approvals(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        from agentdeck.core.approvals import ApprovalState

        wanted = [ApprovalState(s) for s in states] if states else None
        found = self._run(self._deck.approvals(states=wanted, limit=limit))
        return [a.to_dict() for a in found]

    def asks(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        from agentdeck.core.asks import AskState

        wanted = [AskState(s) for s in states] if states else None
        return [a.to_public() for a in self._run(self._deck.asks(states=wanted, limit=limit))]

    def merges(self, *, limit: int = 100) -> list[Record]:
        return [e.result() for e in self._run(self._deck.merges(limit=limit))]

    def unsupervised(self, agents: Sequence[Record]) -> set[str]:
        from agentdeck.runner.steering import supervisor_gone

        ids = {a["id"] for a in agents if a["state"] in remote_follow.LIVE_STATES}
        return {i for i in ids if supervisor_gone(self._run(self._deck.get_agent(i)))}

    def close(self) -> None:
        try:
            self._run(self._deck.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


async def _open(settings: Settings) -> Deck:
    from agentdeck.daemon.compose import open_deck

    return await open_deck(settings, embedded=True)


async def _next(feed: AsyncIterator[list[StoredEvent]]) -> list[StoredEvent] | None:
    try:
        return await anext(feed)
    except StopAsyncIteration:
        return None
