"""``agentdeck run``: create one agent through the Deck and follow it to its end.

Written once for both decks (``cli.decks``): a daemon's, which runs the agent, or
this command's own when none runs, which runs it in this process. Both ways into
the CLI call ``run_agent``: the quick path (``cli.quick``) when no daemon runs,
the Typer command always. Without a daemon, the agent's Claude Code is spawned
before the rest is imported and the store opened (``cli.early``, through
``opened_deck``'s ``booting``), so it boots meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdeck.cli.ending import Ending
    from agentdeck.core.agent import AgentSpec
    from agentdeck.settings import Settings


def run_agent(spec: AgentSpec, template: str | None, as_json: bool) -> int:
    """Run ``spec``'s agent (from ``template`` if given) to the end of its turn; the
    exit code from its result."""
    from agentdeck.cli.context import configure_logging, end_quickly, run_async

    configure_logging()  # as the Typer app has it (a no-op when it did already)

    async def go(settings: Settings) -> int:
        from agentdeck.cli.ending import watch

        return await watch("run", lambda ending: work(settings, ending))

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings, ending=ending, booting=(spec, template)) as deck:
            agent = await deck.create_agent(spec, keep_alive=False, template=template)
            from agentdeck.cli.steer import follow

            code = await follow(deck, agent.id, after=0, as_json=as_json, until_turn=False)
        end_quickly()  # the deck is closed, its agents' processes reaped
        return code

    return run_async(go)
