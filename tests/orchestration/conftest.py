"""An embedded deck with orchestration (store, runner, Orchestrator) on a fresh
home, and helpers to start an orchestrator on a scripted scenario."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.core.events import StoredEvent
from agentdeck.core.templates import apply_template
from agentdeck.daemon.compose import build_orchestration, build_runner
from agentdeck.orchestration.service import Orchestrator
from agentdeck.orchestration.templates import resolve, user_agents_dir
from agentdeck.runner.runner import Runner
from agentdeck.runner.session import AgentSession
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.waiting import eventually
from tests.web.conftest import daemon  # noqa: F401 - the web tests' real daemon, here too

SCENARIOS = Path(__file__).parent / "scenarios"


@dataclass
class Team:
    store: Store
    runner: Runner
    orch: Orchestrator
    settings: Settings
    tmp: Path

    def scenario(self, data: dict[str, Any]) -> str:
        path = self.tmp / f"{data['name']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return str(path)

    async def lead(
        self, scenario: str, *, template: str = "orchestrator", **spec: Any
    ) -> AgentSession:
        """An orchestrator (kept alive) playing ``scenario``."""
        found = resolve(self.settings, template)
        made = apply_template(found, AgentSpec(prompt="lead the work", scenario=scenario, **spec))
        return await self.runner.start(made, keep_alive=True)

    async def children(self, agent_id: str) -> list[Agent]:
        return await self.orch.children(agent_id)

    async def child(self, parent_id: str, name: str, *, timeout: float = 60) -> Agent:
        async def probe() -> Agent | None:
            return next((c for c in await self.children(parent_id) if c.name == name), None)

        return await eventually(probe, timeout=timeout, what=f"child {name}")

    async def settled(self, agent_id: str, *, timeout: float = 120) -> Agent:
        """The agent once its turn is over (idle or final, with a turn done)."""

        async def probe() -> Agent | None:
            agent = await self.orch.agent(agent_id)
            return agent if not agent.state.is_busy and agent.turns > 0 else None

        try:
            return await eventually(probe, timeout=timeout, what=f"{agent_id} to finish its turn")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{await self.picture()}") from None

    async def picture(self, tail: int = 10) -> str:
        """What the deck looked like when a wait timed out: each agent's state, its
        session's, the process behind it and its last events (a flake seen only in
        CI tells where it stopped)."""
        lines = []
        for a in reversed(await self.store.list_agents(limit=1000, include_archived=True)):
            session = self.runner.sessions.get(a.id)
            alive = a.pid is not None and psutil.pid_exists(a.pid)
            extra = {k: a.extra[k] for k in ("waiting_for", "asking") if k in a.extra}
            lines.append(
                f"{a.name} {a.id}: {a.state.value} (session: "
                f"{session.agent.state.value if session else None}), tool {a.current_tool}, "
                f"turns {a.turns}, pid {a.pid} {'alive' if alive else 'gone'} {extra}"
            )
            for e in (await self.events(a.id))[-tail:]:
                lines.append(f"  #{e.id} {e.ts:.3f} {e.type} {json.dumps(e.data)[:200]}")
        for task in asyncio.all_tasks():
            frames = awaiting(task.get_coro())
            if any("orchestration" in x or "waits" in x for x in frames):
                lines.append(f"task {task.get_name()}: " + " -> ".join(frames))
        return "\n".join(lines)

    async def events(self, agent_id: str, type_: str | None = None) -> list[StoredEvent]:
        found = await self.store.read(agent_id=agent_id, limit=100_000)
        return [e for e in found if type_ is None or e.type == type_]

    async def tool_results(self, agent_id: str, tool: str) -> list[str]:
        """The outputs of the agent's calls of ``tool`` (``mcp__deck__`` prefixed)."""
        calls = {
            e.data["tool_use_id"]
            for e in await self.events(agent_id, "tool_called")
            if e.data["tool"] == f"mcp__deck__{tool}"
        }
        return [
            str(e.data["output"])
            for e in await self.events(agent_id, "tool_returned")
            if e.data["tool_use_id"] in calls
        ]


def awaiting(coro: Any) -> list[str]:
    """Where a suspended coroutine is, down its chain of awaits."""
    frames = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            name = frame.f_code.co_filename.rsplit("/", 2)[-1]
            frames.append(f"{name}:{frame.f_lineno} {frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


@contextlib.asynccontextmanager
async def make_team(settings: Settings, tmp_path: Path) -> AsyncIterator[Team]:
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    orch = build_orchestration(store, runner, settings)
    try:
        yield Team(store, runner, orch, settings, tmp_path)
    finally:
        try:
            await runner.shutdown()
        finally:
            orch.close()
            await store.close()


@pytest.fixture
async def team(settings: Settings, tmp_path: Path) -> AsyncIterator[Team]:
    async with make_team(settings, tmp_path) as made:
        yield made


@pytest.fixture
def plain_engineer(settings: Settings) -> None:
    """The built-in engineer without its structured status (``output_schema:
    status``, tests/orchestration/test_catalog_status.py), as the user's template:
    for tests whose workers answer in plain text, each turn scripted for what the
    test is about (messages, waits, restarts), not for their results' shape."""
    built_in = resolve(settings, "engineer")
    agents = user_agents_dir(settings)
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "engineer.md").write_text(
        f"---\nname: engineer\ndescription: {built_in.description}\n---\n{built_in.prompt}\n"
    )
