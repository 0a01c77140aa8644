"""The trace context each agent's Claude Code is spawned with, on the real runner
and CLI (the scripted model), with telemetry on and a warm pool: a warm process is
spawned as the root agent it may serve, so a root agent still takes it; a child,
whose place is in its root's trace, is started cold with that place (a warm
process cannot be given it: its environment was fixed at its spawn). The Claude
Code an embedded ``agentdeck run`` spawns before its store opens is a root's too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import build_runner
from agentdeck.runner.runner import Runner
from agentdeck.runner.warm import Warm
from agentdeck.store.store import Store
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from tests.conftest import make_settings
from tests.support.deckcli import deck, deck_env
from tests.support.receiver import Receiver
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SPEC = AgentSpec(prompt="Say one", scenario="three-turns")


def traceparent(root: str, agent: str) -> str:
    return f"00-{trace_id_of(root):032x}-{span_id_of(agent):016x}-01"


@pytest.fixture
async def pooled(tmp_path: Path) -> AsyncIterator[tuple[Store, Runner]]:
    receiver = Receiver()  # Claude Code's own telemetry, if it sends any
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(tmp_path, warm_pool=1, AGENTDECK_OTEL_ENDPOINT=endpoint)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings, warm_pool=settings.warm_pool)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
            receiver.close()


async def warm_one(runner: Runner) -> Warm:
    async def ready() -> Warm | None:
        return runner.warm._warm[0] if len(runner.warm) else None

    return await eventually(ready, timeout=60, what="a warm Claude Code")


async def test_a_root_takes_the_warm_process_and_a_child_starts_cold_in_its_roots_trace(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    first = await runner.start(SPEC)
    await first.wait_finished(timeout=60)
    assert first.spawn_options().env["TRACEPARENT"] == traceparent(first.agent.id, first.agent.id)

    warm = await warm_one(runner)
    assert warm.spawned[1]["TRACEPARENT"] == traceparent(warm.agent_id, warm.agent_id)
    root = await runner.start(SPEC)
    assert root.warm_start and root.agent.id == warm.agent_id
    await root.wait_finished(timeout=60)

    await warm_one(runner)
    child = await runner.start(SPEC, parent_id=root.agent.id)
    assert not child.warm_start
    await child.wait_finished(timeout=60)
    assert (await store.get_agent(child.agent.id)).state == AgentState.DONE
    env = child.spawn_options().env
    assert env["TRACEPARENT"] == traceparent(root.agent.id, child.agent.id)
    assert f"agentdeck.agent.id={child.agent.id}" in env["OTEL_RESOURCE_ATTRIBUTES"]


def test_an_embedded_run_still_adopts_its_early_claude_code(tmp_path: Path) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    try:
        env = deck_env(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint)
        done = deck(env, "run", "--scenario", "three-turns", "Say hi", "--json")
    finally:
        receiver.close()
    assert done.code == 0, done.err
    agent = done.json()["agent"]
    assert agent["state"] == "done"
    assert agent["extra"].get("warm") is True  # spawned with the trace context it is given
