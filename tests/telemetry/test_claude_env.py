"""What an agent's Claude Code is told of telemetry: nothing when it is off; the
endpoint, the resource attributes and its place in the trace when it is on."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.errors import ConfigError
from agentdeck.runner.options import agent_env
from agentdeck.telemetry import claude_env
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from tests.conftest import make_settings

ENDPOINT = "http://127.0.0.1:4318"


def test_off_nothing_of_telemetry_reaches_the_agent(tmp_path: Path) -> None:
    env = agent_env(make_settings(tmp_path), None, "ag1")
    assert not [k for k in env if k.startswith(("OTEL_", "CLAUDE_CODE_ENABLE_TEL", "TRACEPARENT"))]


def test_on_the_agent_exports_to_the_same_endpoint_in_its_trees_trace(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT)
    claude_env.remember_root("child-env", "root-env")
    env = agent_env(settings, None, "child-env")
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == ENDPOINT
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    assert env["OTEL_TRACES_EXPORTER"] == env["OTEL_METRICS_EXPORTER"] == "otlp"
    trace, span = trace_id_of("root-env"), span_id_of("child-env")
    assert env["TRACEPARENT"] == f"00-{trace:032x}-{span:016x}-01"
    attrs = dict(pair.split("=", 1) for pair in env["OTEL_RESOURCE_ATTRIBUTES"].split(","))
    assert attrs["agentdeck.agent.id"] == "child-env"
    assert attrs["agentdeck.trace_id"] == f"{trace:032x}"
    assert attrs["agentdeck.span_id"] == f"{span:016x}"


def test_an_agent_whose_tree_is_unknown_gets_its_attributes_but_no_traceparent(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT)
    env = claude_env.claude_env(settings, "never-seen")
    assert "TRACEPARENT" not in env
    assert "agentdeck.agent.id=never-seen" in env["OTEL_RESOURCE_ATTRIBUTES"]


def test_a_hostile_agent_id_cannot_add_resource_attributes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT)
    env = claude_env.claude_env(settings, "x,service.name=evil y")
    pairs = env["OTEL_RESOURCE_ATTRIBUTES"].split(",")
    assert [p.split("=", 1)[0] for p in pairs] == [
        "service.namespace",
        "agentdeck.agent.id",
        "agentdeck.span_id",
    ]


def test_a_protocol_agentdeck_does_not_ship_is_refused_with_what_to_do(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from agentdeck.telemetry.otlp import OtlpSink, traces_url

    settings = make_settings(
        tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT, AGENTDECK_OTEL_PROTOCOL="grpc"
    )
    with pytest.raises(ConfigError, match="OTLP/HTTP") as raised:
        OtlpSink.from_settings(settings)
    assert "http/protobuf" in (raised.value.hint or "")
    assert traces_url(ENDPOINT + "/") == ENDPOINT + "/v1/traces"


def test_an_agent_of_a_tree_not_traced_is_told_so(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT, otel_sample_ratio=0.0)
    claude_env.remember_root("untraced-env", "untraced-env")
    assert claude_env.claude_env(settings, "untraced-env")["TRACEPARENT"].endswith("-00")
