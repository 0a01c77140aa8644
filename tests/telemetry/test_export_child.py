"""The span exporter in a process of its own (``telemetry.child`` and ``worker``):
the daemon's follower on a real deck hands it compact records over a pipe, and a
real OTLP/HTTP receiver gets the spans (decoded with opentelemetry-proto) — on a
flush, and what was still open at the stop, cut. A collector that takes the
connection and never answers never holds the daemon up: records past the pipe's
bound are dropped, counted and said once."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import (
    AgentSpawned,
    AssistantText,
    StateChanged,
    ToolCalled,
    ToolReturned,
    spawned_events,
)
from agentdeck.daemon.compose import open_deck
from agentdeck.telemetry.child import ExportChild
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from agentdeck.telemetry.records import EVENT, FROM, ROOT, UPTO
from agentdeck.telemetry.service import Telemetry
from tests.conftest import make_settings
from tests.support.receiver import Hung, Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


def spans_at(receiver: Receiver) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for body in receiver.bodies():
        for group in ExportTraceServiceRequest.FromString(body).resource_spans:
            for scope in group.scope_spans:
                out.update({s.name: s for s in scope.spans})
    return out


async def test_the_followers_records_become_spans_at_the_receiver(tmp_path: Path) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint)
    deck = await open_deck(settings, embedded=True)
    telemetry: Telemetry | None = None
    try:
        now = time.time()
        # Born before the follower started: met mid-life, read from the deck.
        older = Agent(
            id="older", name="older", state=AgentState.RUNNING, spec=AgentSpec(prompt="p"),
            cwd="/", created_at=now, updated_at=now,
        )  # fmt: skip
        await deck._store.record(spawned_events(older), older)
        telemetry = Telemetry(deck, spans=await ExportChild.start(settings))
        await telemetry.start()
        stored = await deck._store.append(
            [
                AgentSpawned(agent_id="kid", ts=now, name="kid", cwd="/", spec={},
                             parent_id="older"),
                ToolCalled(agent_id="kid", ts=now, tool_use_id="c1", tool="Read",
                           input={"file_path": "a.txt"}),
                AssistantText(agent_id="kid", ts=now, text="x" * 10_000),
                ToolReturned(agent_id="kid", ts=now + 1, tool_use_id="c1", output="y" * 10_000,
                             size=10_000),
                StateChanged(agent_id="kid", ts=now + 2, old="running", new="done"),
                ToolCalled(agent_id="older", ts=now, tool_use_id="c2", tool="Grep", input={}),
            ]
        )  # fmt: skip
        await telemetry.seen(stored[-1].id)
        await telemetry.flush()
        spans = spans_at(receiver)
        assert set(spans) == {"invoke_agent kid", "turn", "execute_tool Read"}
        kid = spans["invoke_agent kid"]
        assert kid.trace_id == trace_id_of("older").to_bytes(16, "big")
        assert kid.parent_span_id == span_id_of("older").to_bytes(8, "big")
        read = spans["execute_tool Read"]
        assert read.parent_span_id == spans["turn"].span_id
        # Nothing of a tool's output or a message's text is sent to the exporter.
        assert not any(b"x" * 100 in body or b"y" * 100 in body for body in receiver.bodies())
    finally:
        await deck.close()
        if telemetry is not None:
            await telemetry.stop()
        receiver.close()
    # At the stop, what was open ends, cut: the older agent and its tool call.
    spans = spans_at(receiver)
    assert {"invoke_agent older", "execute_tool Grep"} <= set(spans)
    cut = {kv.key: kv.value.bool_value for kv in spans["invoke_agent older"].attributes}
    assert cut["agentdeck.span.cut"] is True
    assert telemetry.spans is not None and telemetry.spans.process.returncode == 0  # type: ignore[attr-defined]


async def test_a_collector_that_never_answers_never_holds_the_daemon_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hung = Hung()
    endpoint = hung.url.removesuffix("/hook")
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint)
    child = await ExportChild.start(settings, limit=64 * 1024)
    child.stop_seconds = 1.0  # its post waits on the collector: it is stopped
    sent = 0
    try:
        child.put((ROOT, "a", "a"))
        child.put((EVENT, 1, "a", "agent_spawned", time.time(), {"name": "a", "spec": {}}))

        async def dropping() -> bool:
            nonlocal sent
            for _ in range(50):  # turns of tool calls: a batch is posted, and waits
                sent += 1
                call = f"c{sent}"
                child.put(
                    (
                        EVENT,
                        2,
                        "a",
                        "tool_called",
                        time.time(),
                        {"tool_use_id": call, "tool": "Bash", "input": {"c": "z" * 300}},
                    )
                )
                child.put((EVENT, 3, "a", "tool_returned", time.time(), {"tool_use_id": call}))
                child.send()  # never waits
            return child.dropped > 0  # else eventually polls again, writing more

        with caplog.at_level(logging.WARNING, logger="agentdeck.telemetry.child"):
            await eventually(dropping, timeout=60, what="records dropped")
            for _ in range(100):
                child.put((EVENT, 4, "a", "cost_updated", time.time(), {}))
                child.send()
        said = [r for r in caplog.records if "dropped" in r.getMessage()]
        assert len(said) == 1 and "behind" in said[0].getMessage()
        assert child.dropped >= 100
    finally:
        await child.stop(time.time())
        hung.close()
    assert child.process.returncode is not None  # stopped, not left behind


async def test_an_exporter_that_died_costs_the_daemon_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    child = await ExportChild.start(make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint))
    try:
        child.process.kill()
        await child.process.wait()
        with caplog.at_level(logging.WARNING, logger="agentdeck.telemetry.child"):
            for n in range(3):
                child.put((EVENT, n, "a", "cost_updated", time.time(), {}))
                assert child.send() is False
            await child.flush()  # nothing to wait for
        said = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
        assert len(said) == 1 and "ended" in said[0]
        assert child.dropped == 3
    finally:
        await child.stop(time.time())
        receiver.close()


async def test_an_exporter_that_ended_is_started_again_and_its_agents_are_met_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint)
    deck = await open_deck(settings, embedded=True)
    child = await ExportChild.start(settings)
    child.restart_seconds = 0.05
    telemetry = Telemetry(deck, spans=child)
    try:
        await telemetry.start()
        now = time.time()
        store = deck._store
        boss = Agent(
            id="boss", name="boss", state=AgentState.RUNNING, spec=AgentSpec(prompt="p"),
            cwd="/", created_at=now, updated_at=now,
        )  # fmt: skip
        await store.record(spawned_events(boss), boss)
        first = await store.append(
            [
                ToolCalled(agent_id="boss", ts=now, tool_use_id="c1", tool="Read", input={}),
                ToolReturned(agent_id="boss", ts=now, tool_use_id="c1", output="", size=0),
            ]
        )
        await telemetry.seen(first[-1].id)
        await telemetry.flush()
        assert "execute_tool Read" in spans_at(receiver)
        killed = child.process
        killed.kill()
        await killed.wait()
        with caplog.at_level(logging.WARNING, logger="agentdeck.telemetry.child"):

            async def started_again() -> bool:
                # Events keep coming: their records are dropped until a new child runs.
                stored = await store.append(
                    [ToolCalled(agent_id="boss", ts=now, tool_use_id="x", tool="Ls", input={})]
                )
                await telemetry.seen(stored[-1].id)
                return child.generation == 1 and child.process.returncode is None

            await eventually(started_again, timeout=60, what="the exporter started again")
        assert child.process is not killed and child.dropped >= 1
        assert telemetry.restarts == 1
        assert any("started again" in r.getMessage() for r in caplog.records)
        # The agent met before goes on in its tree's trace; a new one has its own.
        later = await store.append(
            [
                ToolCalled(agent_id="boss", ts=now + 1, tool_use_id="c2", tool="Grep", input={}),
                ToolReturned(agent_id="boss", ts=now + 1, tool_use_id="c2", output="", size=0),
                AgentSpawned(agent_id="kid", ts=now + 1, name="kid", cwd="/", spec={},
                             parent_id="boss"),
                StateChanged(agent_id="kid", ts=now + 2, old="running", new="done"),
            ]
        )  # fmt: skip
        await telemetry.seen(later[-1].id)
        await telemetry.flush()
        spans = spans_at(receiver)
        grep, kid = spans["execute_tool Grep"], spans["invoke_agent kid"]
        assert grep.trace_id == kid.trace_id == trace_id_of("boss").to_bytes(16, "big")
    finally:
        await deck.close()
        await telemetry.stop()
        receiver.close()
    assert child.process.returncode == 0  # the new child stopped as the first would have
    # The boss's span the old child had open is lost; the new one, cut at the stop,
    # holds the kid and links to the boss's first span.
    boss_span = spans_at(receiver)["invoke_agent boss"]
    by_id = {
        span.span_id: span
        for body in receiver.bodies()
        for group in ExportTraceServiceRequest.FromString(body).resource_spans
        for scope in group.scope_spans
        for span in scope.spans
    }
    turn = by_id[kid.parent_span_id]  # the boss's turn that spawned it
    assert turn.name == "turn" and turn.parent_span_id == boss_span.span_id
    assert [link.span_id for link in boss_span.links] == [span_id_of("boss").to_bytes(8, "big")]


async def test_an_exporter_that_keeps_ending_is_started_again_ever_later(tmp_path: Path) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    child = await ExportChild.start(make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint))
    child.restart_seconds = 0.05
    waits: list[float] = []
    try:
        for generation in range(3):
            child.process.kill()
            await child.process.wait()
            died = time.monotonic()

            async def again(generation: int = generation) -> bool:
                child.put((EVENT, 1, "a", "cost_updated", time.time(), {}))
                child.send()
                return child.generation == generation + 1

            await eventually(again, timeout=60, what="started again")
            waits.append(time.monotonic() - died)
        # Each child died young: 0.05, 0.1, 0.2 s at least before the next.
        assert waits[0] >= 0.05 and waits[1] >= 0.1 and waits[2] >= 0.2
    finally:
        await child.stop(time.time())
        receiver.close()
    assert child.process.returncode == 0


async def test_a_log_that_cannot_be_read_is_said_once_and_the_exporter_goes_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The exporter reads the events itself: a database it cannot open (here, in a
    home not made) is said once, named (on its stderr, the daemon's), flushes are
    still answered, and records sent directly are still traced."""
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(tmp_path / "never-made", AGENTDECK_OTEL_ENDPOINT=endpoint)
    child = await ExportChild.start(settings)
    try:
        child.put((FROM, 0))
        for n in range(1, 4):
            child.put((UPTO, n * 10))
            await child.flush()  # answered though the log could not be read
        now = time.time()
        child.put((ROOT, "a", "a"))
        child.put((EVENT, 31, "a", "agent_spawned", now, {"name": "a", "spec": {}}))
        child.put((EVENT, 32, "a", "state_changed", now + 1, {"old": "running", "new": "done"}))
        await child.flush()
        assert "invoke_agent a" in spans_at(receiver)
    finally:
        await child.stop(time.time())
        receiver.close()
    said = capfd.readouterr().err
    assert said.count("cannot read the event log") == 1, said
    assert f"SQLite file {settings.database}" in said
    assert child.process.returncode == 0
