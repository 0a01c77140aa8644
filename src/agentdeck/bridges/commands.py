"""The chat commands, platform-neutral: ``/new``, ``/project``, ``/status``,
``/stop``, ``/resume``, ``/cost``, ``/approve``, ``/memory``. Each takes who
asked and where, acts through the daemon's deck (for that member), and returns the text to answer
with. A platform only maps its own command syntax onto these."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentdeck.bridges.platform import Actor, Conversation, Incoming
from agentdeck.errors import AgentdeckError

if TYPE_CHECKING:
    from agentdeck.bridges.core import Bridge

NO_AGENT = "No agent in this conversation yet: say something, or use /new."


def may_administer(bridge: Bridge, actor: Actor) -> bool:
    admins = bridge.config.admins
    return actor.id in admins or any(f"role:{r}" in admins for r in actor.roles)


async def new(
    bridge: Bridge, actor: Actor, conversation: Conversation, prompt: str, template: str | None
) -> str:
    """Start an agent for ``conversation`` (a fresh thread, as platforms use it)."""
    if not bridge.allowed(conversation):
        return "This channel is not served."
    conv = bridge.conversation(conversation.key)
    if conv.agent_id is not None:
        return f"This conversation already has agent {conv.agent_id}."
    if template:
        conv.template = template
    bridge.save()
    if not prompt.strip():
        return "Ready: the first message here starts the agent" + (
            f" ({template})." if template else "."
        )
    await bridge.handle(Incoming(conversation, actor, prompt))
    return "Starting an agent" + (f" ({template})" if template else "") + "."


def project(bridge: Bridge, actor: Actor, conversation: Conversation, path: str) -> str:
    """Bind a channel to a project directory under an allow-listed root (admins only)."""
    if not bridge.allowed(conversation):
        return "This channel is not served."
    if not may_administer(bridge, actor):
        bridge.record(actor, "refused", command="project", path=path)
        return "Only an admin may bind this channel to a project."
    target = Path(path).expanduser()
    try:
        resolved = target.resolve(strict=True)
    except OSError:
        return f"No such directory: {path}"
    roots = [Path(r).expanduser().resolve() for r in bridge.config.project_roots]
    if not resolved.is_dir() or not any(resolved.is_relative_to(r) for r in roots):
        allowed = ", ".join(str(r) for r in roots) or "none are configured"
        return f"{path} is not a directory under an allowed project root ({allowed})."
    bridge.conversation(conversation.channel).project = str(resolved)
    bridge.save()
    bridge.record(actor, "project", channel=conversation.channel, path=str(resolved))
    return f"New agents in this channel work in {resolved}."


async def status(bridge: Bridge, conversation: Conversation) -> str:
    agent_id = bridge.conversation(conversation.key).agent_id
    if agent_id is None:
        return NO_AGENT
    agent = await bridge.deck.get_agent(agent_id)
    line = f"{agent.name} ({agent.id}): {agent.state}, {agent.turns} turn(s)"
    if agent.current_tool:
        line += f", using {agent.current_tool}"
    queued = len(bridge.conversation(conversation.key).queue)
    return line + (f"; {queued} message(s) queued" if queued else "")


async def stop(bridge: Bridge, actor: Actor, conversation: Conversation) -> str:
    agent_id = bridge.conversation(conversation.key).agent_id
    if agent_id is None:
        return NO_AGENT
    try:
        await bridge.deck_for(actor).interrupt(agent_id)
    except AgentdeckError as exc:
        return f"Not stopped: {exc.message}"
    bridge.record(actor, "stop", agent=agent_id)
    return "Stopping the current turn."


async def resume(bridge: Bridge, actor: Actor, conversation: Conversation) -> str:
    agent_id = bridge.conversation(conversation.key).agent_id
    if agent_id is None:
        return NO_AGENT
    try:
        await bridge.deck_for(actor).resume(agent_id)
    except AgentdeckError as exc:
        return f"Not resumed: {exc.message}"
    bridge.conversation(conversation.key).busy = True
    bridge.save()
    bridge.record(actor, "resume", agent=agent_id)
    return "Resuming."


async def cost(bridge: Bridge, conversation: Conversation) -> str:
    agent_id = bridge.conversation(conversation.key).agent_id
    if agent_id is None:
        return NO_AGENT
    agent = await bridge.deck.get_agent(agent_id)
    return (
        f"{agent.name}: ${agent.cost_usd:.4f}, "
        f"{agent.input_tokens} tokens in, {agent.output_tokens} out"
    )


def approve(bridge: Bridge, conversation: Conversation) -> str:
    """The requests still open in this conversation."""
    shown = [
        p
        for p in bridge.state.prompts.values()
        if p.conversation == conversation.key and p.kind == "approval"
    ]
    if not shown:
        return "No request waits for an answer here."
    return "Waiting for an answer:\n" + "\n".join(f"- {p.text.splitlines()[0]}" for p in shown)


async def memory(bridge: Bridge, query: str) -> str:
    if not query.strip():
        return "Search for what? /memory QUERY"
    hits = await bridge.deck.memory_search(query, limit=5)
    if not hits:
        return f"Nothing remembered about {query!r}."
    return "\n".join(f"- {h.title}: {h.snippet}" for h in hits)
