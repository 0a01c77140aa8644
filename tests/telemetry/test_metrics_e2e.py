"""Metrics pushed over OTLP as a user turns them on: the real daemon with
``OTEL_EXPORTER_OTLP_ENDPOINT`` (here its AGENTDECK_ alias) and a 1 s interval,
the real Claude Code CLI on the scripted model. A real OTLP/HTTP receiver gets
``/v1/metrics`` pushes (decoded with opentelemetry-proto) showing what ``/metrics``
shows: agents by state, tokens, tool calls, with the spans' resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentState
from tests.conftest import make_settings
from tests.support.receiver import Receiver
from tests.support.served import serving
from tests.support.waiting import eventually
from tests.telemetry.test_daemon_e2e import from_service, metric_values, settled, spans_of
from tests.telemetry.test_metrics_push import by_label, labels, points

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def pushes(receiver: Receiver) -> list[Any]:
    """The daemon's pushes (the agents' Claude Code pushes its own there too)."""
    return from_service([r for r in receiver.received if r.path == "/v1/metrics"])


async def test_a_run_is_pushed_as_metrics_with_the_figures_metrics_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=e2e")
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(
        tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint, AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL="1000"
    )
    try:
        async with serving(settings) as served, served.api() as api:
            created = await api.post(
                "/api/agents",
                json={"prompt": "say one, two", "scenario": "three-turns", "name": "pushed"},
            )
            assert created.status_code == 201, created.text
            final = await settled(served, created.json()["id"])
            assert final["output_tokens"] > 0

            scraped = metric_values((await api.get("/metrics")).text)
            states = {k[1][0][1]: v for k, v in scraped.items() if k[0] == "agentdeck_agents"}
            tokens = {k[1][0][1]: v for k, v in scraped.items() if k[0] == "agentdeck_tokens_total"}
            assert states[final["state"]] == 1 and tokens["output"] == final["output_tokens"]

            # A push shows what /metrics shows (the agent has settled: nothing changes;
            # one under way when it did may still show the figures before).
            async def same_as_scraped() -> dict[str, list[Any]] | None:
                sent = pushes(receiver)
                got = points(sent)[0] if sent else {}
                shows = by_label(got, "agentdeck.agents", "agentdeck.agent.state")
                used = by_label(got, "gen_ai.client.token.usage", "gen_ai.token.type")
                return got if shows.get(final["state"]) == 1 and used == tokens else None

            got = await eventually(same_as_scraped, timeout=30, what="a metrics push")
            assert by_label(got, "agentdeck.agents", "agentdeck.agent.state") == {
                str(s): states.get(str(s), 0.0) for s in AgentState
            }
            assert by_label(got, "gen_ai.client.token.usage", "gen_ai.token.type") == tokens
            calls = {
                k[1][0][1]: v for k, v in scraped.items() if k[0] == "agentdeck_tool_calls_total"
            }
            assert by_label(got, "agentdeck.tool_calls", "gen_ai.tool.name") == calls == {"Bash": 2}
    finally:
        receiver.close()
    # The metrics go to the signal's own path, beside the traces, with their resource.
    assert {r.path for r in from_service(receiver.received)} == {"/v1/traces", "/v1/metrics"}
    _, resources = points(pushes(receiver))
    traced = [(r.headers, r.body) for r in receiver.received if r.path == "/v1/traces"]
    _, span_resources = spans_of(traced)
    # One instance: the spans are sent by a process of their own, handed the daemon's.
    pushed = {tuple(sorted(labels(r).items())) for r in resources}
    assert pushed == {tuple(sorted(labels(r).items())) for r in span_resources}
    (attributes,) = [dict(a) for a in pushed]
    assert attributes["service.name"] == "agentdeck"
    assert attributes["deployment.environment"] == "e2e"
