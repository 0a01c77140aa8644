"""The telemetry follower on a real deck (embedded, real SQLite, no CLI): agents
spawned before it started are read once with their ancestry and join their
tree's trace; the counts for /metrics follow the log; stopping ends what is open."""

from __future__ import annotations

import time

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import StateChanged, ToolCalled, ToolReturned, spawned_events
from agentdeck.daemon.compose import open_deck
from agentdeck.settings import Settings
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from agentdeck.telemetry.service import Telemetry, running
from agentdeck.telemetry.spans import SpanData

pytestmark = pytest.mark.anyio


class Kept:
    """A sink that keeps what it is given."""

    def __init__(self) -> None:
        self.spans: list[SpanData] = []
        self.shut = False

    def export(self, spans: list[SpanData]) -> None:
        self.spans.extend(spans)

    def flush(self) -> None:
        return

    def shutdown(self) -> None:
        self.shut = True


def agent(agent_id: str, parent: str | None) -> Agent:
    now = time.time()
    return Agent(
        id=agent_id, name=agent_id, state=AgentState.RUNNING, spec=AgentSpec(prompt="p"),
        cwd="/", created_at=now, updated_at=now, parent_id=parent,
    )  # fmt: skip


async def test_agents_older_than_the_follower_join_their_trees_trace(settings: Settings) -> None:
    deck = await open_deck(settings, embedded=True)
    store = deck._store
    sink = Kept()
    try:
        # A tree born before the daemon (re)started: root -> mid -> leaf.
        for made in (agent("root", None), agent("mid", "root"), agent("leaf", "mid")):
            await store.record(spawned_events(made), made)
        telemetry = Telemetry(deck, sink)
        await telemetry.start()
        now = time.time()
        stored = await store.append(
            [
                ToolCalled(agent_id="leaf", ts=now, tool_use_id="c1", tool="Read", input={}),
                ToolReturned(agent_id="leaf", ts=now + 1, tool_use_id="c1", output="x", size=1),
                StateChanged(agent_id="leaf", ts=now + 2, old="running", new="done"),
                ToolCalled(agent_id="nobody", ts=now, tool_use_id="c2", tool="Read", input={}),
            ]
        )
        await telemetry.seen(stored[-1].id)
        assert telemetry.tally.tool_calls == {"Read": 2}
        assert telemetry.tally.events["tool_called"] == 2
        names = {s.name: s for s in sink.spans}
        assert set(names) == {"execute_tool Read", "turn", "invoke_agent leaf"}
        assert {s.trace_id for s in sink.spans} == {trace_id_of("root")}
        assert names["invoke_agent leaf"].parent_id == span_id_of("mid")
    finally:
        await deck.close()
        await telemetry.stop()
    assert sink.shut


async def test_off_only_counts_and_the_metrics_route_finds_it(settings: Settings) -> None:
    from agentdeck.telemetry.service import start

    deck = await open_deck(settings, embedded=True)
    try:
        telemetry = await start(deck, settings)
        assert running(deck) is telemetry and not telemetry.exporting
        assert telemetry.spans is None
        made = agent("solo", None)
        stored = await deck._store.record(spawned_events(made), made)
        await telemetry.seen(stored[-1].id)
        assert telemetry.tally.events == {"agent_spawned": 1, "state_changed": 1}
    finally:
        await deck.close()
        await telemetry.stop()
    assert running(deck) is None  # stopped: /metrics no longer counts on it


async def test_metrics_say_how_many_span_records_never_reached_the_exporter(
    settings: Settings,
) -> None:
    """Dropped records (an exporter gone or far behind) were only logged once."""
    from prometheus_client import CollectorRegistry, generate_latest

    from agentdeck.telemetry.counts import read_gauges
    from agentdeck.web.metrics import _Families
    from tests.telemetry.test_daemon_e2e import metric_values

    deck = await open_deck(settings, embedded=True)
    try:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families(await read_gauges(deck), None, True, dropped=7))
        values = metric_values(generate_latest(registry).decode())
        assert values[("agentdeck_otlp_span_records_dropped_total", ())] == 7
    finally:
        await deck.close()
