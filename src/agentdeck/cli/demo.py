"""``agentdeck demo``: the real pipeline with a scripted model and a small crew."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

from agentdeck.cli.context import console
from agentdeck.cli.daemon import banner
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.daemon.server import serve
from agentdeck.errors import AgentdeckError, ConfigError
from agentdeck.settings import Settings

# How long the demo leaves a worker's question to a person before answering it itself.
AUTO_ANSWER_SECONDS = 20.0
AUTO_ANSWER = (
    "Yes: end it with an exclamation mark. (Answered automatically by the demo: nobody "
    "answered within {seconds:.0f} s.)"
)
LEAD = AgentSpec(
    prompt="Build a tiny greeting module with a test; split the work.",
    name="lead",
    scenario="orchestrate",
)
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
        ids.append((await deck.create_agent(LEAD, keep_alive=True, template="orchestrator")).id)
        console.print(
            f"started a crew of {len(ids)} agents on the scripted model: "
            + ", ".join(s.name or "" for s in (*CREW, LEAD))
        )
        console.print(
            "lead is an orchestrator: it hands the work to two workers, and one of them asks "
            f"a question in the Asks inbox (answered for you after {AUTO_ANSWER_SECONDS:.0f} s)"
        )
        console.print("open the dashboard above to watch them; Ctrl-C stops everything")
        watchers.add(asyncio.create_task(_auto_answer(deck, AUTO_ANSWER_SECONDS)))
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


async def _auto_answer(deck: Deck, after: float) -> None:
    """Answer questions nobody answered within ``after`` seconds, saying so."""
    while True:
        await asyncio.sleep(1.0)
        now = time.time()
        for ask in await deck.asks():
            if now - ask.created_at >= after:
                with contextlib.suppress(AgentdeckError):
                    await deck.answer_ask(
                        ask.id, AUTO_ANSWER.format(seconds=after), by="demo:auto-answer"
                    )
                    console.print(f"  answered {ask.id} for you: nobody did within {after:.0f} s")


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
                for child in await deck.children(a.id):
                    console.print(
                        f"    {child.name} ({a.name}'s {child.spec.template}): {child.state}, "
                        f"{child.turns} turns, ${child.cost_usd:.4f}"
                    )
            stop.set()
            return
        await asyncio.sleep(0.2)
