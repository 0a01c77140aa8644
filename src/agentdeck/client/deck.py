"""``RemoteDeck``: the Deck interface (``core.deck.Deck``) over a daemon's HTTP API.

Each operation is one or a few calls through ``DaemonHTTP``; the answer's JSON is
rebuilt as the core record the in-process Deck returns (``Agent.from_dict``, ...),
and the daemon's errors arrive as the class it raised (``errors.from_body``): a
caller cannot tell the two implementations apart by what they return or raise.

Who acts is the token's user (and the ``client`` channel): the daemon records it,
the caller does not claim it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

from agentdeck.client.http import DaemonHTTP
from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import AgentdeckError, NotFound, UsageError

# The API's largest pages (web.schemas MAX_AGENT_PAGE, MAX_EVENT_PAGE): a longer
# list is read a page at a time.
AGENT_PAGE = 10_000
EVENT_PAGE = 5000
INBOX_PAGE = 1000  # /api/approvals and /api/asks


class RemoteDeck:
    """The deck of the daemon ``http`` talks to. It does not own ``http``'s
    connection unless made by ``connect`` (then ``aclose`` closes it)."""

    def __init__(self, http: DaemonHTTP, *, owns_http: bool = False) -> None:
        self.http = http
        self._owns_http = owns_http

    @classmethod
    def connect(cls, url: str, token: str, *, client: str) -> RemoteDeck:
        """A RemoteDeck with a connection of its own; ``client`` says who calls
        (cli, tui, bridge) for the audit log."""
        return cls(DaemonHTTP(url, token, client=client), owns_http=True)

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> RemoteDeck:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- agents -----------------------------------------------------------------------

    async def create_agent(
        self, spec: AgentSpec, *, keep_alive: bool = True, template: str | None = None
    ) -> Agent:
        body = create_body(spec, keep_alive=keep_alive, template=template)
        return _agent(await self.http.call("POST", "/api/agents", json=body))

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
        params: dict[str, Any] = {"archived": include_archived, "roots": roots}
        if states:
            params["state"] = [str(s) for s in states]
        if text:
            params["q"] = text
        if parent:
            params["parent"] = parent
        found: list[Agent] = []
        while len(found) < limit:
            page = min(limit - len(found), AGENT_PAGE)
            answer = await self.http.call(
                "GET", "/api/agents", params={**params, "limit": page, "offset": offset}
            )
            found += [_agent(a) for a in _field(answer, "agents")]
            if answer.get("next_offset") is None:
                break
            offset = answer["next_offset"]
        return found

    async def get_agent(self, ref: str) -> Agent:
        return _agent(await self.http.call("GET", _path("agents", ref)))

    async def send(self, ref: str, text: str) -> Agent:
        answer = await self.http.call("POST", _path("agents", ref, "messages"), json={"text": text})
        return _agent(answer)

    async def interrupt(self, ref: str) -> Agent:
        return _agent(await self.http.call("POST", _path("agents", ref, "interrupt")))

    async def kill(self, ref: str, *, children: bool = True) -> Agent:
        body = {"children": children}
        return _agent(await self.http.call("POST", _path("agents", ref, "kill"), json=body))

    async def resume(self, ref: str, text: str | None = None, *, fork: bool = False) -> Agent:
        body = {"text": text, "fork": fork}
        return _agent(await self.http.call("POST", _path("agents", ref, "resume"), json=body))

    async def archive(self, ref: str, archived: bool = True) -> Agent:
        body = {"archived": archived}
        return _agent(await self.http.call("POST", _path("agents", ref, "archive"), json=body))

    # -- the event log ----------------------------------------------------------------

    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        found: list[StoredEvent] = []
        while len(found) < limit:
            page = min(limit - len(found), EVENT_PAGE)
            params = _with_agent({"after": after, "limit": page}, agent_id)
            answer = await self.http.call("GET", "/api/events", params=params)
            events = [_event(e) for e in _field(answer, "events")]
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
            params = _with_agent({"before": below, "limit": page}, agent_id)
            answer = await self.http.call("GET", "/api/events", params=params)
            found = [_event(e) for e in _field(answer, "events")] + found
            if answer.get("next_before") is None:
                break
            below = answer["next_before"]
        return found

    async def last_event_id(self) -> int:
        answer = await self.http.call("GET", "/api/stats")
        return int(_field(answer, "last_event_id"))

    async def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """The daemon's event stream, an event a batch. ``heartbeat`` is the
        daemon's to choose: its pings are read, never given as empty batches."""
        params = _with_agent({}, agent_id)
        async with self.http.event_stream(after=after, params=params) as stream:
            async for message in stream:
                data = json.loads(message.data)
                if message.kind == "dropped":
                    raise SubscriptionDropped(int(data["position"]))
                yield [_event(data)]

    # -- approvals --------------------------------------------------------------------

    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        # The API lists pending requests when no state is named: every state is named.
        wanted = [str(s) for s in (states or list(ApprovalState))]
        params = _with_agent({"state": wanted, "limit": _inbox_limit(limit)}, agent_id)
        answer = await self.http.call("GET", "/api/approvals", params=params)
        return [Approval.from_dict(a) for a in _field(answer, "approvals")]

    async def approval(self, ref: str) -> Approval:
        return Approval.from_dict(await self.http.call("GET", _path("approvals", ref)))

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        body: dict[str, Any] = {"decision": decision, "message": message}
        if remember is not None:
            body.update(always=True, scope=str(remember))
        return Approval.from_dict(await self.http.call("POST", _path("approvals", ref), json=body))

    # -- asks -------------------------------------------------------------------------

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        wanted = [str(s) for s in (states or list(AskState))]
        params = _with_agent({"state": wanted, "limit": _inbox_limit(limit)}, agent_id)
        answer = await self.http.call("GET", "/api/asks", params=params)
        return [Ask.from_dict(a) for a in _field(answer, "asks")]

    async def ask(self, ref: str) -> Ask:
        return Ask.from_dict(await self.http.call("GET", _path("asks", ref)))

    async def answer_ask(self, ref: str, answer: str) -> Ask:
        body = {"answer": answer}
        return Ask.from_dict(await self.http.call("POST", _path("asks", ref), json=body))


def _is_a_deck(deck: RemoteDeck) -> Deck:
    """mypy proves RemoteDeck implements the Deck interface."""
    return deck


# The spec's fields the API takes (``AgentCreate``), beside ``keep_alive`` and ``agent``.
_SPEC_FIELDS = (
    "prompt", "name", "cwd", "model", "append_system_prompt", "max_turns", "budget_usd",
    "scenario", "profile", "project", "workspace", "base",
)  # fmt: skip
# Set by the daemon (the template, the token's user), never by a caller of the API.
_DAEMON_SET = ("template", "tools", "orchestrator", "owner")


def create_body(spec: AgentSpec, *, keep_alive: bool, template: str | None) -> dict[str, Any]:
    """``POST /api/agents``'s body for ``spec``. A field the API does not take is
    refused (``UsageError``), never dropped: the agent would run otherwise than asked."""
    default = AgentSpec(prompt=spec.prompt)
    unsendable = [f for f in _DAEMON_SET if getattr(spec, f) != getattr(default, f)]
    if unsendable:
        raise UsageError(
            f"an agent started through the daemon cannot be given {', '.join(unsendable)} "
            "in its spec",
            hint="name an agent template (template=...) for its tools; the daemon records "
            "its owner from the token",
        )
    body: dict[str, Any] = {
        f: getattr(spec, f) for f in _SPEC_FIELDS if getattr(spec, f) is not None
    }
    body.update(allow=list(spec.allow), deny=list(spec.deny), keep_alive=keep_alive)
    if spec.resume_on_restart:
        body["resume_on_restart"] = True
    if template is not None:
        body["agent"] = template
    return body


# What an empty ref is not found as (the daemon's words for each kind).
_NOUNS = {"agents": "agent", "approvals": "approval request", "asks": "question"}


def _path(kind: str, ref: str, action: str | None = None) -> str:
    """``/api/<kind>/<ref>[/<action>]``, the ref quoted whole (a ``/`` or ``?`` in it
    names no other route). An empty ref names nothing (its path would be the list's)."""
    if not ref:
        raise NotFound(_NOUNS[kind], ref)
    path = f"/api/{kind}/{quote(ref, safe='')}"
    return f"{path}/{action}" if action else path


def _with_agent(params: dict[str, Any], agent_id: str | None) -> dict[str, Any]:
    """``params`` for one agent's records (``None``: everyone's). An empty ref names
    no agent: ``NotFound``, as in-process, never everyone's records."""
    if agent_id is None:
        return params
    if not agent_id:
        raise NotFound("agent", agent_id)
    return {**params, "agent": agent_id}


def _inbox_limit(limit: int) -> int:
    if not 1 <= limit <= INBOX_PAGE:
        raise UsageError(f"limit must be between 1 and {INBOX_PAGE}, not {limit}")
    return limit


def _field(answer: object, key: str) -> Any:
    if not isinstance(answer, Mapping) or key not in answer:
        raise AgentdeckError(
            f"the daemon's answer has no {key!r}",
            hint="is the daemon the same version as this client? `agentdeck status` says",
        )
    return answer[key]


def _agent(data: object) -> Agent:
    _field(data, "id")  # a Mapping with an id, or the error that says it is not
    return Agent.from_dict(data)  # type: ignore[arg-type]


def _event(data: Mapping[str, Any]) -> StoredEvent:
    return StoredEvent(
        id=int(data["id"]),
        agent_id=data["agent_id"],
        type=data["type"],
        ts=float(data["ts"]),
        data=dict(data["data"]),
    )
