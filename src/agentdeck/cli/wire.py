"""The read side of the Deck in its wire form, for the CLI's quick path.

The read commands (``cli.reads``: ``ls``, ``show``, ``logs``, the inboxes, the
merge queue) are written once against ``WireDeck``: ``core.deck.Deck``'s reads,
same names and arguments, answering with each record's ``to_dict()`` (a merge
entry's ``result()``, as the API sends it) instead of the record. Building the
records would cost a command ~35 ms of imports (the dataclasses, the events).

Two implementations, chosen in one place (``wire``): ``DaemonWire``, the daemon's
JSON over the quick client, for the deck ``AGENTDECK_URL`` names or when a daemon
runs for the home; else ``PeekWire``, a
read-only look at its database (``store.peek``). The contract test
(``tests/cli/test_wire_contract.py``) holds both to the in-process Deck's records.
"""

from __future__ import annotations

from agentdeck.cli import remote_follow
from agentdeck.homedir import home_path

# Not typing's own: its import (with ``re`` and ``enum``) costs this path ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, Protocol

    from agentdeck.client.quick import Daemon
    from agentdeck.store.peek import Peek

    Record = dict[str, Any]

    class WireDeck(Protocol):
        """``core.deck.Deck``'s reads, answered with the records' ``to_dict()``.

        ``ref`` is an agent's id, a unique id prefix or a unique name; ``states``
        are the states' values; ``agent_id`` and ``parent`` are agent ids."""

        def list_agents(
            self,
            *,
            states: Sequence[str] | None = None,
            include_archived: bool = False,
            limit: int = 100,
            parent: str | None = None,
            roots: bool = False,
        ) -> list[Record]: ...

        def tree(self, *, limit: int = 100) -> list[Record]: ...

        def get_agent(self, ref: str) -> Record: ...

        def events(
            self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
        ) -> list[Record]: ...

        def follow(self, *, after: int, agent_id: str, partial: bool = False) -> Iterator[Record]:
            """One agent's events after ``after``, live, until it has ended (its
            final state's events included): unlike ``Deck.follow``, one agent's,
            one at a time, and over when the agent is. With ``partial``, the edits
            of the text being written between them where the deck has them live
            (``"type": "partial"``, no id: ``Deck.follow_partial``'s)."""
            ...

        def approvals(
            self, *, states: Sequence[str] | None = None, limit: int = 100
        ) -> list[Record]: ...

        def asks(
            self, *, states: Sequence[str] | None = None, limit: int = 100
        ) -> list[Record]: ...

        def merges(self, *, limit: int = 100) -> list[Record]:
            """Merge entries, newest first, each its ``MergeEntry.result()``."""
            ...

        def unsupervised(self, agents: Sequence[Record]) -> set[str]:
            """The ids of ``agents`` shown live whose supervisor is gone (none when
            a daemon answers: it reconciled them)."""
            ...

        def close(self) -> None: ...


EVENT_PAGE = 1000
ALL_AGENTS = 10_000  # the API's largest page of agents


def wire(poll: float = 0.5) -> WireDeck | None:
    """The one place a read command gets its deck: the one ``AGENTDECK_URL`` and
    ``AGENTDECK_TOKEN`` name, when set (never the home's instead); else the daemon's,
    when one runs for this home (``AGENTDECK_HOME``); else a look at its database,
    which ``poll``s to follow a log; None when there is no database at the schema's
    head to look at (then ``wired`` makes it, or the quick path steps aside)."""
    from agentdeck.cli.quick_url import reach

    d = reach(home_path())
    if d is not None:
        return DaemonWire(d)
    from agentdeck.homedir import home_dir
    from agentdeck.store.peek import Peek

    db = Peek.open(home_dir() / "agentdeck.db")
    return None if db is None else PeekWire(db, poll)


def wired(fn: Callable[[WireDeck], int]) -> int:
    """``fn`` on ``wire()``, for the Typer commands: the database is made or
    migrated first when there is none at the schema's head to look at."""
    from agentdeck.cli.context import load_settings

    settings = load_settings()
    deck = wire(settings.command_poll_seconds)
    if deck is None and settings.database_url:
        # A PostgreSQL store: no file to look at; the reads go through a deck opened here.
        from agentdeck.cli.deck_wire import DeckWire

        deck = DeckWire(settings)
    if deck is None:
        import asyncio

        from agentdeck.cli.context import opened_store

        async def migrate() -> None:
            async with opened_store(settings):
                pass

        asyncio.run(migrate())
        deck = wire(settings.command_poll_seconds)
        assert deck is not None, "the store left the database below its head"
    try:
        return fn(deck)
    finally:
        deck.close()


class DaemonWire:
    """The reads over the daemon's API (its JSON is each record's ``to_dict()``)."""

    def __init__(self, d: Daemon) -> None:
        self.daemon = d

    def list_agents(
        self,
        *,
        states: Sequence[str] | None = None,
        include_archived: bool = False,
        limit: int = 100,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Record]:
        params: list[tuple[str, Any]] = [("limit", limit), *[("state", s) for s in states or []]]
        if include_archived:
            params.append(("archived", True))
        if parent is not None:
            params.append(("parent", parent))
        if roots:
            params.append(("roots", True))
        return list(self.daemon.get("/api/agents", params)["agents"])

    def tree(self, *, limit: int = 100) -> list[Record]:
        return list(self.daemon.get("/api/tree", {"limit": limit})["agents"])

    def get_agent(self, ref: str) -> Record:
        if not ref:  # what the peek says (core.agent.find_agent)
            from agentdeck.errors import NotFound

            raise NotFound("agent", ref, hint="use an id, an id prefix of 4+ characters, or a name")
        from agentdeck.client.quick import api_path

        found: Record = self.daemon.get(api_path("agents", ref))
        return found

    def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[Record]:
        params = {"after": after, "limit": limit, "agent": agent_id}
        return list(self.daemon.get("/api/events", params)["events"])

    def follow(self, *, after: int, agent_id: str, partial: bool = False) -> Iterator[Record]:
        # The final state is committed with its events: read after the log, a final
        # state means one more page has it all; a live one, that the stream will.
        if self.get_agent(agent_id)["state"] not in remote_follow.UNFINISHED:
            while batch := self.events(after=after, agent_id=agent_id, limit=EVENT_PAGE):
                yield from batch
                after = int(batch[-1]["id"])
            return
        for event in remote_follow.stream(self.daemon, agent_id, after, partial=partial):
            yield event
            if _ends(event):
                return
        # the daemon ended the stream (it is stopping)

    def approvals(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        from agentdeck.cli.remote import APPROVAL_STATES

        # The API lists pending requests when no state is named: every state is named.
        params = [("limit", limit), *[("state", s) for s in states or APPROVAL_STATES]]
        return list(self.daemon.get("/api/approvals", params)["approvals"])

    def asks(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        from agentdeck.cli.remote import ASK_STATES

        params = [("limit", limit), *[("state", s) for s in states or ASK_STATES]]
        return list(self.daemon.get("/api/asks", params)["asks"])

    def merges(self, *, limit: int = 100) -> list[Record]:
        return list(self.daemon.get("/api/merges", {"limit": limit})["merges"])

    def unsupervised(self, agents: Sequence[Record]) -> set[str]:
        return set()  # the daemon reconciled what it answers with

    def close(self) -> None:
        pass  # one connection per call


class PeekWire:
    """The reads on a read-only look at the database, when no daemon runs: what
    the daemon's Deck would answer from the same rows."""

    def __init__(self, db: Peek, poll: float = 0.5) -> None:
        self.db = db
        self.poll = poll

    def list_agents(
        self,
        *,
        states: Sequence[str] | None = None,
        include_archived: bool = False,
        limit: int = 100,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Record]:
        found = self.db.agents(
            states=states, limit=limit, roots=roots, parent=parent, archived=include_archived
        )
        return [a.to_dict() for a in found]

    def tree(self, *, limit: int = 100) -> list[Record]:
        roots = self.db.agents(limit=limit, roots=True)
        return [a.to_dict() for a in roots + self.db.descendants([a.id for a in roots])]

    def get_agent(self, ref: str) -> Record:
        return self.db.find_agent(ref).to_dict()

    def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[Record]:
        return [e.to_dict() for e in self.db.events(agent_id, after=after, limit=limit)]

    def follow(self, *, after: int, agent_id: str, partial: bool = False) -> Iterator[Record]:
        # Another process supervises it: the log is polled (the text being written
        # lives in that process alone: none here). The final state is
        # committed with its events: once the row says so, one more read has them.
        import time

        finished = False
        while True:
            batch = self.events(after=after, agent_id=agent_id, limit=EVENT_PAGE)
            yield from batch
            if batch:
                after = int(batch[-1]["id"])
                continue
            if finished:
                return
            finished = self.get_agent(agent_id)["state"] not in remote_follow.UNFINISHED
            if not finished:
                time.sleep(self.poll)

    def approvals(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        return [a.to_dict() for a in self.db.approvals(states, limit)]

    def asks(self, *, states: Sequence[str] | None = None, limit: int = 100) -> list[Record]:
        return [a.to_public() for a in self.db.asks(states, limit)]

    def merges(self, *, limit: int = 100) -> list[Record]:
        return [e.result() for e in self.db.merges(limit)]

    def unsupervised(self, agents: Sequence[Record]) -> set[str]:
        """Without a daemon nobody reconciled the store: the agents it has as live
        whose supervisor (an ``agentdeck run``, a daemon that died) is gone."""
        live = [a for a in agents if a["state"] in remote_follow.LIVE_STATES]
        if not live:
            return set()
        from agentdeck.runner import procs

        def gone(a: Record) -> bool:
            watcher = a["pid"] if a["source"] == "external" else a["owner_pid"]
            return not procs.runs_since(watcher, a["updated_at"])  # a reused pid is not it

        return {a["id"] for a in live if gone(a)}

    def close(self) -> None:
        self.db.close()


def _ends(event: Record) -> bool:
    return event["type"] == "state_changed" and event["data"]["new"] in remote_follow.FINAL_STATES


if TYPE_CHECKING:  # mypy proves both are a WireDeck
    from agentdeck.cli.deck_wire import DeckWire

    def _is_a_wire(d: DaemonWire, p: PeekWire, o: DeckWire) -> tuple[WireDeck, ...]:
        return d, p, o
