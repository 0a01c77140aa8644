"""``agentdeck demo``: the real pipeline with a scripted model and a small crew."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from agentdeck.cli.context import console
from agentdeck.cli.daemon import banner
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.daemon.server import serve
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings

CREW = (
    AgentSpec(prompt="Tidy up the notes file", name="notes", scenario="demo"),
    AgentSpec(
        prompt="Fix the failing test in calc.py",
        name="tests",
        scenario="fix-test",
        allow=("Bash(python3:*)",),
    ),
    AgentSpec(prompt="Write a short status report", name="reporter", scenario="slow-stream"),
    AgentSpec(prompt="Hello! Who are you?", name="chat", scenario="chat"),
)


async def run_demo(settings: Settings, *, exit_when_done: bool) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    watchers: set[asyncio.Task[None]] = set()

    async def ready(deck: Deck, info: DaemonInfo, token: str) -> None:
        banner(info, token)
        ids = [(await deck.create_agent(spec, keep_alive=True)).id for spec in CREW]
        console.print(
            f"started a crew of {len(ids)} agents on the scripted model: "
            + ", ".join(s.name or "" for s in CREW)
        )
        console.print("open the dashboard above to watch them; Ctrl-C stops everything")
        if exit_when_done:
            task = asyncio.create_task(_until_settled(deck, ids, stop))
            watchers.add(task)

    try:
        await serve(settings, on_ready=ready, stop=stop)
    except ConfigError:
        if settings.port == 0:
            raise
        console.print(f"port {settings.port} is busy; using a free one")
        await serve(settings.model_copy(update={"port": 0}), on_ready=ready, stop=stop)
    finally:
        for task in watchers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    console.print("demo stopped")
    return 0


async def _until_settled(deck: Deck, ids: list[str], stop: asyncio.Event) -> None:
    """Stop the demo once every crew agent has finished its turn."""
    settled = {
        AgentState.IDLE,
        AgentState.DONE,
        AgentState.ERROR,
        AgentState.INTERRUPTED,
        AgentState.KILLED,
    }
    while True:
        agents = [await deck.get_agent(i) for i in ids]
        if all(a.state in settled and a.turns > 0 for a in agents):
            for a in agents:
                console.print(f"  {a.name}: {a.state}, {a.turns} turns, ${a.cost_usd:.4f}")
            stop.set()
            return
        await asyncio.sleep(0.2)
