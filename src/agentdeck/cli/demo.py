"""``agentdeck demo``: the real pipeline with a scripted model and a small crew."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from dataclasses import replace
from pathlib import Path

from agentdeck.cli.context import console
from agentdeck.cli.daemon import banner
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.asks import AskState
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.errors import AgentdeckError, ConfigError
from agentdeck.runner import procs
from agentdeck.serve import serve
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
        workspace="worktree",  # cwd: the demo's repository (made at start)
    ),
    AgentSpec(prompt="Write a short status report", name="reporter", scenario="slow-stream"),
    AgentSpec(prompt="Hello! Who are you?", name="chat", scenario="chat"),
)

TESTS = CREW[1]
MERGE_TEST = "python3 test_calc.py"
SETTLED = frozenset(
    {AgentState.IDLE, AgentState.DONE, AgentState.ERROR, AgentState.INTERRUPTED, AgentState.KILLED}
)


async def run_demo(settings: Settings, *, exit_when_done: bool) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, *procs.stop_signals()):  # SIGHUP too: as the daemon
        loop.add_signal_handler(sig, stop.set)
    watchers: set[asyncio.Task[None]] = set()

    async def ready(deck: Deck, info: DaemonInfo, token: str) -> None:
        banner(info, token)
        repo = await demo_repository(settings.home_dir / "calc-repo")
        crew = [replace(s, cwd=str(repo)) if s.workspace == "worktree" else s for s in CREW]
        ids = [(await deck.create_agent(spec, keep_alive=True)).id for spec in crew]
        ids.append((await deck.create_agent(LEAD, keep_alive=True, template="orchestrator")).id)
        console.print(
            f"started a crew of {len(ids)} agents on the scripted model: "
            + ", ".join(s.name or "" for s in (*CREW, LEAD))
        )
        console.print(
            "lead is an orchestrator: it hands the work to two workers, and one of them asks "
            f"a question in the Asks inbox (answered for you after {AUTO_ANSWER_SECONDS:.0f} s)"
        )
        console.print(
            f"tests works in a git worktree of {repo}; once it is done, its branch goes "
            f"through the merge queue, gated by `{MERGE_TEST}`"
        )
        console.print("open the dashboard above to watch them; Ctrl-C stops everything")
        watchers.add(asyncio.create_task(_auto_answer(deck, AUTO_ANSWER_SECONDS)))
        merged = asyncio.create_task(_merge_when_done(deck, ids[CREW.index(TESTS)]))
        watchers.add(merged)
        if exit_when_done:
            task = asyncio.create_task(_until_settled(deck, ids, merged, stop))
            watchers.add(task)

    async def quiet_on_stop() -> None:
        # The demo's own helpers (auto-answer, merge) stop first: nothing of theirs
        # runs, or prints, while the daemon stops the agents.
        await stop.wait()
        for task in watchers:
            task.cancel()

    watchers.add(asyncio.create_task(quiet_on_stop()))
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
        for ask in await deck.asks(states=[AskState.PENDING]):
            if now - ask.created_at >= after:
                with contextlib.suppress(AgentdeckError):
                    await deck.answer_ask(
                        ask.id, AUTO_ANSWER.format(seconds=after), by="demo:auto-answer"
                    )
                    console.print(f"  answered {ask.id} for you: nobody did within {after:.0f} s")


async def demo_repository(path: Path) -> Path:
    """A git repository with fix-test's failing test on ``main``, for the worktree
    agent; made again (add() broken again) at each demo."""
    from agentdeck.mockmodel import builtin_scenario_path, load_scenario
    from agentdeck.worktrees.git import AS_AGENTDECK, git

    if not (path / ".git").is_dir():
        path.mkdir(parents=True, exist_ok=True)
        await git("init", "--quiet", "--initial-branch=main", cwd=path)
    await git("checkout", "--quiet", "--force", "main", cwd=path, ok=(0, 1, 128))
    for rel, content in load_scenario(builtin_scenario_path("fix-test")).workspace_files.items():
        (path / rel).write_text(content, encoding="utf-8")
    await git("add", "--all", cwd=path)
    if (await git("status", "--porcelain", cwd=path)).strip():
        await git(*AS_AGENTDECK, "commit", "--quiet", "-m", "add() subtracts", cwd=path)
    return path


async def _merge_when_done(deck: Deck, agent_id: str) -> None:
    """Once the worktree agent has finished its turn, land its branch, test-gated."""
    while True:
        agent = await deck.get_agent(agent_id)
        if agent.turns > 0 and agent.state in SETTLED:
            break
        await asyncio.sleep(0.2)
    try:
        entry = await deck.merge(agent.id, test=MERGE_TEST, by="demo")
    except AgentdeckError as exc:
        console.print(f"  could not merge {agent.name}'s branch: {exc.message}")
        return
    said = entry.reason if entry.landed else f"{entry.state}: {entry.reason}"
    console.print(f"  merge queue: {agent.name}'s branch {said}")


async def _until_settled(
    deck: Deck, ids: list[str], merged: asyncio.Task[None], stop: asyncio.Event
) -> None:
    """Stop the demo once every crew agent has finished its turn (and the merge)."""
    while True:
        agents = [await deck.get_agent(i) for i in ids]
        if merged.done() and all(a.state in SETTLED and a.turns > 0 for a in agents):
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
