"""The telemetry follower on a real deck (embedded, real SQLite, no CLI): agents
spawned before it started are read once with their ancestry and join their
tree's trace; the counts for /metrics follow the log; stopping ends what is open."""

from __future__ import annotations

import time

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import (
    AgentSpawned,
    Notice,
    StateChanged,
    ToolCalled,
    ToolReturned,
    spawned_events,
)
from agentdeck.daemon.compose import open_deck
from agentdeck.settings import Settings
from agentdeck.store.feed import LogFeed
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from agentdeck.telemetry.records import FROM, ROOT, UPTO, Record
from agentdeck.telemetry.service import InProcess, Telemetry, running
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
        log = LogFeed(settings.database)
        telemetry = Telemetry(deck, sink, log=log)
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
        log.close()
    assert sink.shut


class Told(InProcess):
    """What the follower sends the exporter, kept (and traced, as the worker does)."""

    def __init__(self, sink: Kept, log: LogFeed) -> None:
        super().__init__(sink, 1.0, log)
        self.told: list[Record] = []

    def send(self) -> bool:
        self.told += self.pending
        return super().send()


async def test_the_follower_sends_no_event_and_the_log_is_traced_in_its_order(
    settings: Settings,
) -> None:
    """The exporter reads the events from the log; the follower only says how far it
    is settled and, where they fall in it, the roots it looked up. A merge of an
    agent met before is traced (the follower used to drop its notice)."""
    deck = await open_deck(settings, embedded=True)
    store = deck._store
    sink = Kept()
    log = LogFeed(settings.database)
    told = Told(sink, log)
    telemetry = Telemetry(deck, spans=told)
    try:
        await telemetry.start()
        boss = agent("boss", None)
        await store.record(spawned_events(boss), boss)
        now = time.time()
        merge = {"id": "m1", "branch": "agentdeck/boss", "target": "main", "test": "pytest"}
        stored = await store.append(
            [
                AgentSpawned(agent_id="kid", ts=now, name="kid", cwd="/", spec={"prompt": "p"},
                             parent_id="boss"),
                ToolCalled(agent_id="kid", ts=now, tool_use_id="c1", tool="Read", input={}),
                ToolReturned(agent_id="kid", ts=now + 1, tool_use_id="c1", output="x", size=1),
                Notice(agent_id="boss", ts=now + 1, kind="merge_queued", message="q",
                       detail=merge),
                Notice(agent_id="boss", ts=now + 2, kind="merge", message="landed",
                       detail={**merge, "state": "landed", "landed": True}),
                StateChanged(agent_id="kid", ts=now + 3, old="running", new="done"),
            ]
        )  # fmt: skip
        await telemetry.seen(stored[-1].id)
        kinds = {record[0] for record in told.told}
        assert kinds <= {FROM, UPTO, ROOT}, told.told
        spawn = stored[0].id
        assert (UPTO, spawn - 1) in told.told and (ROOT, "kid", "boss") in told.told
        assert told.told.index((UPTO, spawn - 1)) < told.told.index((ROOT, "kid", "boss"))
        names = {s.name: s for s in sink.spans}
        assert {"execute_tool Read", "invoke_agent kid", "merge agentdeck/boss"} <= set(names)
        assert names["invoke_agent kid"].trace_id == trace_id_of("boss")
        assert names["merge agentdeck/boss"].parent_id == span_id_of("boss")
    finally:
        await deck.close()
        await telemetry.stop()
        log.close()


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
