"""What every part of ``RemoteDeck`` stands on: the connection, reading the daemon's
answers back into core records, the API's paths and pages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self
from urllib.parse import quote

from agentdeck.client.http import DaemonHTTP
from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.core.events import StoredEvent
from agentdeck.errors import AgentdeckError, NotFound, UsageError

# The API's largest pages (web.schemas MAX_AGENT_PAGE, MAX_EVENT_PAGE): a longer
# list is read a page at a time.
AGENT_PAGE = 10_000
EVENT_PAGE = 5000
INBOX_PAGE = 1000  # /api/approvals and /api/asks


class RemoteBase:
    """The deck of the daemon ``http`` talks to. It does not own ``http``'s
    connection unless made by ``connect`` (then ``aclose`` closes it)."""

    def __init__(self, http: DaemonHTTP, *, owns_http: bool = False) -> None:
        self.http = http
        self._owns_http = owns_http

    @classmethod
    def connect(cls, url: str, token: str, *, client: str) -> Self:
        """A RemoteDeck with a connection of its own; ``client`` says who calls
        (cli, tui, bridge) for the audit log."""
        return cls(DaemonHTTP(url, token, client=client), owns_http=True)

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def acting_for(self, tag: str) -> Self:
        """This deck acting for ``tag``, a chat member a bridge serves
        (``discord:1234:alice``): the same connection, every call saying whom it is
        for (``X-Agentdeck-Actor``). The daemon takes the name only from a bridge's
        connection (``client="bridge"``) and audits it as ``user:bridge:<tag>``;
        closing the view leaves the connection open."""
        return type(self)(self.http.sending({"X-Agentdeck-Actor": tag}))

    # -- agents -----------------------------------------------------------------------


# The spec's fields the API takes (``AgentCreate``), beside ``keep_alive`` and ``agent``.
_SPEC_FIELDS = (
    "prompt", "name", "cwd", "model", "append_system_prompt", "max_turns", "budget_usd",
    "scenario", "profile", "project", "workspace", "base", "output_schema", "auto_compact_at",
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
    if spec.labels:
        body["labels"] = list(spec.labels)
    if spec.record:
        body["record"] = True
    if template is not None:
        body["agent"] = template
    return body


# What an empty ref is not found as (the daemon's words for each kind).
_NOUNS = {"agents": "agent", "approvals": "approval request", "asks": "question"}


def api_path(kind: str, ref: str, action: str | None = None) -> str:
    """``/api/<kind>/<ref>[/<action>]``, the ref quoted whole (a ``/`` or ``?`` in it
    names no other route). An empty ref names nothing (its path would be the list's)."""
    if not ref:
        raise NotFound(_NOUNS[kind], ref)
    path = f"/api/{kind}/{quote(ref, safe='')}"
    return f"{path}/{action}" if action else path


def with_agent(params: dict[str, Any], agent_id: str | None) -> dict[str, Any]:
    """``params`` for one agent's records (``None``: everyone's). An empty ref names
    no agent: ``NotFound``, as in-process, never everyone's records."""
    if agent_id is None:
        return params
    if not agent_id:
        raise NotFound("agent", agent_id)
    return {**params, "agent": agent_id}


def inbox_limit(limit: int) -> int:
    if not 1 <= limit <= INBOX_PAGE:
        raise UsageError(f"limit must be between 1 and {INBOX_PAGE}, not {limit}")
    return limit


def field(answer: object, key: str) -> Any:
    if not isinstance(answer, Mapping) or key not in answer:
        raise AgentdeckError(
            f"the daemon's answer has no {key!r}",
            hint="is the daemon the same version as this client? `agentdeck status` says",
        )
    return answer[key]


def agent_of(data: object) -> Agent:
    field(data, "id")  # a Mapping with an id, or the error that says it is not
    return Agent.from_dict(data)  # type: ignore[arg-type]


def event_of(data: Mapping[str, Any]) -> StoredEvent:
    return StoredEvent(
        id=int(data["id"]),
        agent_id=data["agent_id"],
        type=data["type"],
        ts=float(data["ts"]),
        data=dict(data["data"]),
    )
