"""The metrics pushed over OTLP/HTTP, in process: a real deck (embedded, real
SQLite), the real telemetry follower and a real HTTP receiver decoding
``ExportMetricsServiceRequest`` with opentelemetry-proto. The push sends what
``/metrics`` reads (the same ``read_gauges`` and ``Tally``), a last time when it
stops; a collector that never answers holds neither the loop nor the stop; the
settings it cannot honour stop the daemon at start with what to set."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import select
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import (
    PermissionRequested,
    PermissionResolved,
    ToolCalled,
    spawned_events,
)
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import read_info
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from agentdeck.telemetry import metrics as otlp_metrics
from agentdeck.telemetry.counts import WAIT_BUCKETS, read_gauges
from agentdeck.telemetry.metrics import OtlpMetrics
from agentdeck.telemetry.push import PushConfig, push_config
from agentdeck.telemetry.service import Telemetry
from tests.conftest import make_settings
from tests.support.receiver import Hung, Received, Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

ENDPOINT = "http://127.0.0.1:4318"


def points(received: list[Received]) -> tuple[dict[str, list[Any]], list[Any]]:
    """The data points of the LAST push by metric name, and every resource."""
    by_name: dict[str, list[Any]] = {}
    resources = []
    for got in received[-1:]:
        body = got.body
        if got.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            resources.append(resource_metrics.resource)
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    by_name[metric.name] = list(getattr(metric, kind).data_points)
                    by_name[metric.name + ":kind"] = [kind]
    return by_name, resources


def labels(point: Any) -> dict[str, Any]:
    out = {}
    for kv in point.attributes:
        out[kv.key] = getattr(kv.value, kv.value.WhichOneof("value"))
    return out


def value(point: Any) -> float:
    return float(getattr(point, point.WhichOneof("value")))


def by_label(got: dict[str, list[Any]], name: str, key: str) -> dict[str, float]:
    return {labels(p)[key]: value(p) for p in got.get(name, [])}


def agent(agent_id: str, state: AgentState, tokens: tuple[int, int], cost: float) -> Agent:
    now = time.time()
    return Agent(
        id=agent_id, name=agent_id, state=state, spec=AgentSpec(prompt="p"), cwd="/",
        created_at=now, updated_at=now, input_tokens=tokens[0], output_tokens=tokens[1],
        cost_usd=cost,
    )  # fmt: skip


@pytest.fixture
async def followed(settings: Settings) -> AsyncIterator[tuple[Deck, Telemetry]]:
    """A deck with two agents and the follower counting its log."""
    deck = await open_deck(settings, embedded=True)
    telemetry = Telemetry(deck)
    try:
        for made in (
            agent("busy", AgentState.RUNNING, (1200, 340), 0.25),
            agent("over", AgentState.DONE, (800, 60), 0.5),
        ):
            await deck._store.record(spawned_events(made), made)
        await telemetry.start()
        yield deck, telemetry
    finally:
        await telemetry.stop()
        await deck.close()


async def test_the_push_sends_the_figures_metrics_reads(followed: tuple[Deck, Telemetry]) -> None:
    deck, telemetry = followed
    receiver = Receiver()
    url = f"http://127.0.0.1:{receiver.server.server_address[1]}/v1/metrics"
    push = OtlpMetrics.to(url, 3600.0, deck, telemetry.tally)
    push.start()
    try:
        now = time.time()
        stored = await deck._store.append(
            [
                ToolCalled(agent_id="busy", ts=now, tool_use_id="c1", tool="Bash", input={}),
                PermissionRequested(
                    agent_id="busy", ts=now, request_id="r1", tool="Bash", input={}
                ),
                PermissionResolved(agent_id="busy", ts=now + 7, request_id="r1", decision="allow"),
            ]
        )
        await telemetry.seen(stored[-1].id)
        gauges = await read_gauges(deck)
        await push.stop()  # the interval is an hour: only the last push is sent
    finally:
        receiver.close()

    assert [r.path for r in receiver.received] == ["/v1/metrics"]
    got, resources = points(receiver.received)
    assert all(
        any(
            kv.key == "service.name" and kv.value.string_value == "agentdeck" for kv in r.attributes
        )
        for r in resources
    )
    states = by_label(got, "agentdeck.agents", "agentdeck.agent.state")
    assert states == {str(s): gauges.sums.agents_by_state.get(str(s), 0) for s in AgentState}
    assert states["running"] == 1 and states["done"] == 1
    tokens = by_label(got, "gen_ai.client.token.usage", "gen_ai.token.type")
    assert tokens == {"input": 2000, "output": 400}
    assert got["gen_ai.client.token.usage:kind"] == ["sum"]
    assert {labels(p)["gen_ai.operation.name"] for p in got["gen_ai.client.token.usage"]} == {
        "chat"
    }
    assert value(got["agentdeck.cost"][0]) == pytest.approx(0.75)
    assert by_label(got, "agentdeck.tool_calls", "gen_ai.tool.name") == {"Bash": 1}
    ingested = by_label(got, "agentdeck.events.ingested", "agentdeck.event.type")
    assert ingested == {k: float(v) for k, v in telemetry.tally.events.items()}
    assert by_label(got, "agentdeck.approvals.resolved", "agentdeck.approval.decision") == {
        "allow": 1
    }
    (wait,) = got["agentdeck.approval.wait"]
    assert got["agentdeck.approval.wait:kind"] == ["histogram"]
    assert list(wait.explicit_bounds) == list(WAIT_BUCKETS)
    assert wait.count == 1 and wait.sum == pytest.approx(7.0)
    assert value(got["agentdeck.approvals.pending"][0]) == 0
    assert by_label(got, "agentdeck.merge_queue.depth", "agentdeck.merge.state") == {
        "queued": 0,
        "merging": 0,
    }
    # Stopped: the Tally no longer tells the SDK's histogram.
    assert telemetry.tally.approval_wait.listeners == []


async def test_every_interval_a_push_with_what_changed_since(
    followed: tuple[Deck, Telemetry],
) -> None:
    deck, telemetry = followed
    receiver = Receiver()
    url = f"http://127.0.0.1:{receiver.server.server_address[1]}/v1/metrics"
    push = OtlpMetrics.to(url, 0.1, deck, telemetry.tally)
    push.start()
    try:
        await _until(lambda: len(receiver.bodies()) >= 1)
        assert states_of(points(receiver.received)[0])["idle"] == 0
        made = agent("late", AgentState.IDLE, (5, 5), 0.0)
        stored = await deck._store.record(spawned_events(made), made)
        await telemetry.seen(stored[-1].id)
        # A push already under way may still show the store before it: the next ones do.
        await _until(lambda: states_of(points(receiver.received)[0]).get("idle") == 1)
        later = points(receiver.received)[0]
        assert by_label(later, "gen_ai.client.token.usage", "gen_ai.token.type") == {
            "input": 2005,
            "output": 405,
        }
    finally:
        await push.stop()
        receiver.close()


def states_of(got: dict[str, list[Any]]) -> dict[str, float]:
    return by_label(got, "agentdeck.agents", "agentdeck.agent.state")


async def _until(condition: Callable[[], bool]) -> None:
    async def probe() -> bool:
        return condition()

    await eventually(probe, what="a push")


async def test_a_collector_that_never_answers_holds_neither_the_loop_nor_the_stop(
    followed: tuple[Deck, Telemetry],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    deck, telemetry = followed
    monkeypatch.setattr(otlp_metrics, "STOP_DEADLINE", 0.5)
    hung = Hung()
    url = hung.url.replace("/hook", "/v1/metrics")
    exporter = OTLPMetricExporter(endpoint=url, timeout=60)  # the request alone waits a minute
    push = OtlpMetrics(exporter, 0.1, deck, telemetry.tally)
    push.start()
    try:
        # A push waits on the collector in its thread (its connection pending at the
        # listening socket, never accepted); meanwhile the loop writes and follows.
        await _until(lambda: bool(select.select([hung.sock], [], [], 0)[0]))
        made = agent("meanwhile", AgentState.IDLE, (1, 1), 0.0)
        stored = await deck._store.record(spawned_events(made), made)
        await telemetry.seen(stored[-1].id)
        await push.stop()  # returns once its deadline passed, the request still waiting
    finally:
        hung.close()
    assert any("last metrics push did not end" in r.getMessage() for r in caplog.records)


async def test_a_collector_refusing_connections_costs_a_logged_failure(
    followed: tuple[Deck, Telemetry], caplog: pytest.LogCaptureFixture
) -> None:
    deck, telemetry = followed
    closed = Hung()
    url = closed.url.replace("/hook", "/v1/metrics")
    closed.close()  # nobody listens there any more: connections are refused
    push = OtlpMetrics(OTLPMetricExporter(endpoint=url, timeout=1), 3600.0, deck, telemetry.tally)
    push.start()
    await push.push()  # does not raise
    await push.stop()
    assert any("Failed to export metrics" in r.getMessage() for r in caplog.records)


# --- what the settings turn on, and what they cannot -----------------------------


def test_on_with_an_endpoint_off_without_or_with_none(tmp_path: Path) -> None:
    assert push_config(make_settings(tmp_path)) is None
    on = push_config(make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT + "/"))
    assert on == PushConfig("http://127.0.0.1:4318/v1/metrics", 60.0)
    elsewhere = make_settings(
        tmp_path,
        AGENTDECK_OTEL_ENDPOINT=ENDPOINT,
        AGENTDECK_OTEL_METRICS_ENDPOINT="http://metrics.local:4318/custom",
        AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL="1000",
    )
    assert push_config(elsewhere) == PushConfig("http://metrics.local:4318/custom", 1.0)
    none = make_settings(
        tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT, AGENTDECK_OTEL_METRICS_EXPORTER="none"
    )
    assert push_config(none) is None
    # Metrics alone, without an OTLP endpoint: not pushed (OpenTelemetry stays off).
    alone = make_settings(tmp_path, AGENTDECK_OTEL_METRICS_ENDPOINT="http://metrics.local:4318/x")
    assert push_config(alone) is None


def test_the_standard_variables_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ENDPOINT)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m.local:4318/v1/metrics")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "2500")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    config = push_config(Settings(home=tmp_path / "home"))
    assert config == PushConfig("http://m.local:4318/v1/metrics", 2.5)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"AGENTDECK_OTEL_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
        ({"AGENTDECK_OTEL_METRICS_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc"),
        (
            {"AGENTDECK_OTEL_METRICS_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json",
        ),
        ({"AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL": "soon"}, "OTEL_METRIC_EXPORT_INTERVAL='soon'"),
        ({"AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL": "0"}, "OTEL_METRIC_EXPORT_INTERVAL='0'"),
        ({"AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL": "-5"}, "OTEL_METRIC_EXPORT_INTERVAL='-5'"),
        ({"AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL": "1.5"}, "OTEL_METRIC_EXPORT_INTERVAL='1.5'"),
        ({"AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL": "99"}, "OTEL_METRIC_EXPORT_INTERVAL='99'"),
        ({"AGENTDECK_OTEL_METRICS_EXPORTER": "prometheus"}, "OTEL_METRICS_EXPORTER=prometheus"),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_it(
    tmp_path: Path, extra: dict[str, str], named: str
) -> None:
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT, **extra)
    with pytest.raises(ConfigError) as refused:
        push_config(settings)
    assert named in str(refused.value)
    assert refused.value.hint


async def test_the_daemon_refuses_to_start_with_a_bad_interval(tmp_path: Path) -> None:
    from agentdeck.serve import serve

    settings = make_settings(
        tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT, AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL="1m"
    )
    with pytest.raises(ConfigError, match="OTEL_METRIC_EXPORT_INTERVAL='1m'"):
        await serve(settings, stop=asyncio.Event())
    assert read_info(settings) is None


OFF = textwrap.dedent(
    """
    import asyncio, json, sys
    from agentdeck.settings import Settings
    from agentdeck.telemetry.counts import Tally
    from agentdeck.telemetry.push import start

    settings = Settings(home=sys.argv[1], AGENTDECK_OTEL_ENDPOINT="http://127.0.0.1:9",
                        AGENTDECK_OTEL_METRICS_EXPORTER="none")
    pushed = asyncio.run(start(object(), Tally(), settings))
    heavy = ("opentelemetry", "agentdeck.telemetry.metrics")
    heavy = sorted(m for m in sys.modules if m.startswith(heavy))
    print(json.dumps({"pushed": pushed is not None, "heavy": heavy}))
    """
)


def test_none_imports_nothing_of_the_metrics_sdk(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENTDECK_"))}
    done = subprocess.run(
        [sys.executable, "-c", OFF, str(tmp_path / "home")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"pushed": False, "heavy": []}
