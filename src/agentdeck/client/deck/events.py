"""``RemoteDeck``'s event log: ``/api/events`` and the event stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from agentdeck.client.deck.base import EVENT_PAGE, RemoteBase, event_of, field, with_agent
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped


class RemoteEvents(RemoteBase):
    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        found: list[StoredEvent] = []
        while len(found) < limit:
            page = min(limit - len(found), EVENT_PAGE)
            params = with_agent({"after": after, "limit": page}, agent_id)
            answer = await self.http.call("GET", "/api/events", params=params)
            events = [event_of(e) for e in field(answer, "events")]
            found += events
            if len(events) < page:
                break
            after = events[-1].id
        return found

    async def events_before(
        self, *, agent_id: str | None = None, before: int | None = None, limit: int = 200
    ) -> list[StoredEvent]:
        below = before if before is not None else await self.last_event_id() + 1
        found: list[StoredEvent] = []
        while len(found) < limit and below >= 1:  # the API's `before` is 1 or more
            page = min(limit - len(found), EVENT_PAGE)
            params = with_agent({"before": below, "limit": page}, agent_id)
            answer = await self.http.call("GET", "/api/events", params=params)
            found = [event_of(e) for e in field(answer, "events")] + found
            if answer.get("next_before") is None:
                break
            below = answer["next_before"]
        return found

    async def last_event_id(self) -> int:
        answer = await self.http.call("GET", "/api/stats")
        return int(field(answer, "last_event_id"))

    async def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """The daemon's event stream, an event a batch, after one empty batch when
        the stream is open (a follower knows it is live before any event comes: the
        TUI's top line). ``heartbeat`` is the daemon's to choose: its pings are read,
        never given as empty batches."""
        params = with_agent({}, agent_id)
        async with self.http.event_stream(after=after, params=params) as stream:
            yield []
            async for message in stream:
                data = json.loads(message.data)
                if message.kind == "dropped":
                    raise SubscriptionDropped(int(data["position"]))
                if message.kind != PartialText.type:  # not asked for; a daemon may add
                    yield [event_of(data)]

    async def follow_partial(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent | PartialText]]:
        """``follow``, the stream asked for the text being written as well."""
        params = with_agent({"partial": "true"}, agent_id)
        async with self.http.event_stream(after=after, params=params) as stream:
            yield []
            async for message in stream:
                data = json.loads(message.data)
                if message.kind == "dropped":
                    raise SubscriptionDropped(int(data["position"]))
                if message.kind == PartialText.type:
                    yield [PartialText.from_dict(data)]
                else:
                    yield [event_of(data)]
