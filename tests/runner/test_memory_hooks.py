"""A tool call does not wait for its observation: Claude Code would wait for a
PostToolUse hook before the model sees the result, so observations are read off
the session's events and recorded after, one by one, in the calls' order; a
summary waits for them; a denied call leaves none."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import ToolCalled, ToolReturned
from agentdeck.memory.service import Memory
from agentdeck.runner.memory_hooks import SessionMemory

pytestmark = pytest.mark.anyio


class SlowMemory:
    """Our seam: records what it is asked, each observation held until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.observed: list[str] = []
        self.summarized_after: list[str] | None = None

    async def observe(self, **kw: Any) -> None:
        if kw["tool_input"].get("n") == "1":  # the first is slow: the rest wait for it
            self.started.set()
            await self.release.wait()
        self.observed.append(kw["tool_input"]["n"])

    async def summarize(self, **_kw: Any) -> None:
        self.summarized_after = list(self.observed)


async def test_observations_are_recorded_after_in_order_and_a_summary_waits() -> None:
    memory = SlowMemory()
    agent = Agent(
        id="a1", name="a", state=AgentState.RUNNING, spec=AgentSpec(prompt="p"), cwd="/tmp",
        created_at=1.0, updated_at=1.0, session_id="s1",
    )  # fmt: skip
    hooks = SessionMemory(cast(Memory, memory), lambda: agent, inject=False)
    assert "PostToolUse" not in hooks.hooks()  # nothing Claude Code waits for
    hooks.denied("t4")
    for n in ("1", "2", "3", "4"):
        called = ToolCalled(agent_id="a1", ts=1.0, tool_use_id="t" + n, tool="Bash", input={"n": n})
        returned = ToolReturned(agent_id="a1", ts=1.0, tool_use_id="t" + n, output="out")
        hooks.saw([called])
        hooks.saw([returned])
    await asyncio.wait_for(memory.started.wait(), 5)  # the first is recording, held
    assert memory.observed == []  # nothing overtook it
    asked = asyncio.Event()

    async def summary_of_the_session() -> None:
        asked.set()  # the task runs on into ended() up to where it must wait
        await hooks.ended()

    summary = asyncio.create_task(summary_of_the_session())
    await asyncio.wait_for(asked.wait(), 5)
    assert memory.summarized_after is None  # the summary waits for the observations
    memory.release.set()
    await asyncio.wait_for(summary, 5)
    assert memory.observed == ["1", "2", "3"]  # the denied call never ran
    assert memory.summarized_after == ["1", "2", "3"]
