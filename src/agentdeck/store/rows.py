"""Domain objects <-> table rows. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import Agent, prompt_scrubbed
from agentdeck.core.event_scrub import tool_name
from agentdeck.core.event_types import StoredEvent
from agentdeck.core.usage import owner_of, project_of, template_of
from agentdeck.errors import SecretNotKept

if TYPE_CHECKING:  # the event classes load where events are written, not read
    from agentdeck.core.events import Event
    from agentdeck.core.ports import Command


def agent_to_row(agent: Agent) -> dict[str, Any]:
    """Every column but ``archived``, which only ``set_archived`` changes; its prompt
    and last error scrubbed like the event log (whoever wrote it): the raw prompt is
    never written down (``prompt_scrubbed``)."""
    agent = prompt_scrubbed(agent)
    return {
        "id": agent.id,
        "name": agent.name,
        "state": str(agent.state),
        "source": str(agent.source),
        "spec": agent.spec.to_dict(),
        "cwd": agent.cwd,
        "session_id": agent.session_id,
        "cost_usd": agent.cost_usd,
        "input_tokens": agent.input_tokens,
        "output_tokens": agent.output_tokens,
        "turns": agent.turns,
        "current_tool": tool_name(agent.current_tool) if agent.current_tool else None,
        "last_error": _scrubbed(agent.last_error),
        "pid": agent.pid,
        "owner_pid": agent.owner_pid,
        "parent_id": agent.parent_id,
        "owner": owner_of(agent),
        "project": project_of(agent),
        "template": template_of(agent),
        "extra": dict(agent.extra),
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
    }


# What each table's rows say, scrubbed like the event log when written and when
# read (a row an older version wrote raw is read scrubbed too): the store's modules
# and ``peek`` both go by this.
SAID: dict[str, tuple[str, ...]] = {
    "approvals": ("input", "reason", "message"),  # a request and its answer
    "asks": ("text", "answer", "questions"),  # a question, its choices and its answer
    "merges": ("reason", "outcome"),  # what an entry's merge said
    "notify_dead": ("payload", "reason"),  # what a letter carries and says
}


def said_scrubbed(table: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a row of ``table``) with what it says (``SAID``) scrubbed."""
    from agentdeck.core.redact import scrub_value  # here: reading rows needs no patterns

    return {**data, **{k: scrub_value(data[k]) for k in SAID[table] if k in data}}


def _scrubbed(text: str | None) -> str | None:
    if not text:
        return text
    from agentdeck.core.redact import scrub  # here: reading rows needs no patterns

    return scrub(text)


def row_to_agent(row: Mapping[Any, Any]) -> Agent:
    return Agent.from_dict(row)  # the columns are ``to_dict()``'s keys


def event_to_row(event: Event) -> dict[str, Any]:
    return {
        "agent_id": event.agent_id,
        "type": str(event.type),
        "ts": event.ts,
        "data": event.data(),
    }


def stored_event(event_id: int, row: Mapping[Any, Any]) -> StoredEvent:
    return StoredEvent(
        id=event_id, agent_id=row["agent_id"], type=row["type"], ts=row["ts"], data=row["data"]
    )


def row_to_event(row: Mapping[Any, Any]) -> StoredEvent:
    return stored_event(row["id"], row)


def command_payload(agent_id: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A steering command's payload as it may be written: one that scrubbing would
    change is refused (``SecretNotKept``), never written raw nor queued redacted
    (the process that takes it would act on what nobody asked for)."""
    from agentdeck.core.redact import scrub_value

    if scrub_value(payload) != payload:
        raise SecretNotKept(
            f"the {kind} command for agent {agent_id} holds a secret: the database never "
            "holds one, so it was not queued for the process that runs the agent",
            hint="give it where the agent runs, or without the secret",
        )
    return payload


def row_to_command(row: Mapping[Any, Any]) -> Command:
    from agentdeck.core.ports import Command

    return Command(
        id=row["id"],
        agent_id=row["agent_id"],
        kind=row["kind"],
        payload=row["payload"] or {},
        created_at=row["created_at"],
        claimed_at=row["claimed_at"],
        claimed_by=row["claimed_by"],
    )
