"""``agentdeck compact ID [INSTRUCTIONS]``: Claude Code's compaction of a live agent.

Claude Code compacts a session when it is sent its ``/compact`` slash command as a
user message (with optional instructions after it, what the summary should keep):
it summarises the conversation with the model, and its stream says so with a
``compact_boundary`` system message (``compact_metadata``: ``trigger``,
``pre_tokens``, ``post_tokens``), which the runner records as a Notice of that kind
(``runner.mapping``). This command sends it through the Deck, waits for that notice
and prints the tokens before and after. Only an idle agent: compacting a finished
one would resume it first, and a busy one would queue the command behind its turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentdeck.cli import out
from agentdeck.cli.context import run_async
from agentdeck.cli.ending import watch
from agentdeck.core.agent import FINAL_STATES, AgentState
from agentdeck.core.compaction import BOUNDARY, compact_text, compaction
from agentdeck.errors import AgentProcessError, UsageError
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.cli.ending import Ending
    from agentdeck.core.deck import Deck
    from agentdeck.core.events import StoredEvent


def register(app: typer.Typer) -> None:
    app.command("compact")(compact)


def compact(
    agent: Annotated[str, typer.Argument(help="Agent id, unique id prefix, or name.")],
    instructions: Annotated[
        str | None,
        typer.Argument(help="What the summary should keep (one line; optional)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Compact an idle agent's context (Claude Code's /compact) and say the tokens
    before and after."""

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli.decks import opened_deck

        text = compact_text(instructions)
        async with opened_deck(settings, ending=ending) as deck:
            found = await deck.get_agent(agent)
            if not found.state.is_live:
                raise UsageError(
                    f"{found.id} is {found.state}: only a live agent is compacted",
                    hint=f"agentdeck resume {found.id} first, then compact it",
                )
            if found.state is not AgentState.IDLE:
                # Claude Code would queue it behind the turn under way: whether it
                # then compacts is not known, so it is refused.
                raise UsageError(
                    f"{found.id} is {found.state}: an agent is compacted between turns",
                    hint="compact it when it is idle (agentdeck ls shows its state)",
                )
            mark = await deck.last_event_id()
            await deck.compact(found.id, instructions)
            return await _outcome(deck, found.id, mark, text, as_json)

    raise typer.Exit(run_async(lambda settings: watch("compact", lambda e: work(settings, e))))


async def _outcome(deck: Deck, agent_id: str, mark: int, text: str, as_json: bool) -> int:
    """Follow the log past ``mark`` until the compaction is said; ``AgentProcessError``
    when the turn that got ``text`` ends without one, or the agent ends."""
    sent = False
    async for batch in deck.follow(after=mark, agent_id=agent_id):
        for event in batch:
            found = _read(event, text, sent)
            if found == "sent":
                sent = True
            elif isinstance(found, dict):
                return _say(agent_id, found, as_json)
            elif found is not None:
                raise AgentProcessError(found)
    raise AgentProcessError(f"{agent_id}: the deck stopped before it compacted")


def _read(event: StoredEvent, text: str, sent: bool) -> str | dict[str, Any] | None:
    data = event.data
    if event.type == "user_message_sent" and data.get("text") == text:
        return "sent"
    if event.type == "notice" and data.get("kind") == BOUNDARY and sent:
        found = compaction(data)
        return found if found["trigger"] == "manual" else None  # Claude Code's own: not this
    if event.type == "turn_completed" and sent:
        return f"{event.agent_id} did not compact: {data.get('result') or 'no compaction said'}"
    if event.type == "state_changed" and data.get("new") in FINAL_STATES:
        return f"{event.agent_id} ended ({data.get('new')}) before it compacted"
    return None


def _say(agent_id: str, found: dict[str, Any], as_json: bool) -> int:
    if as_json:
        out.print_json({"agent_id": agent_id, "compacted": True, **found})
        return 0
    before, after = found["pre_tokens"], found["post_tokens"]
    tokens = f": {before:,} → {after:,} tokens" if before is not None and after is not None else ""
    out.say(f"compacted {agent_id}{tokens}")
    return 0
