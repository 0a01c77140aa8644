"""What an agent's Claude Code is told of telemetry: nothing when it is off; the
endpoint, the resource attributes and its place in the trace when it is on."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import spawned_events
from agentdeck.errors import ConfigError, StoreError
from agentdeck.governance.governor import Governor
from agentdeck.runner.options import agent_env
from agentdeck.runner.procs import CARRIED
from agentdeck.store.store import Store
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


def agent(agent_id: str, parent: str | None, **extra: str) -> Agent:
    return Agent(
        id=agent_id, name=agent_id, state=AgentState.STARTING, spec=AgentSpec(prompt="p"),
        cwd="/", created_at=1.0, updated_at=1.0, parent_id=parent, extra=dict(extra),
    )  # fmt: skip


@pytest.mark.anyio
async def test_a_process_that_traces_nothing_gives_a_grandchild_its_place(tmp_path: Path) -> None:
    """A runner host starting an agent whose tree another node traces: its root is
    read up its parent chain in the store, and its Claude Code is named by its own
    id even when it runs in a warm process started under another."""
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT)
    store = Store.open(settings.database)
    try:
        for made in (agent("host-root", None), agent("host-mid", "host-root")):
            await store.record(spawned_events(made), made)
        leaf = agent("host-leaf", "host-mid", **{CARRIED: "warm-id"})
        assert "TRACEPARENT" not in claude_env.for_agent(settings, leaf)  # not read yet
        governor = Governor(store, settings)
        assert await claude_env.learn_root(settings, leaf, governor.ancestors) == "host-root"
        env = claude_env.for_agent(settings, leaf)
    finally:
        await store.close()
    trace, span = trace_id_of("host-root"), span_id_of("host-leaf")
    assert env["TRACEPARENT"] == f"00-{trace:032x}-{span:016x}-01"
    assert "agentdeck.agent.id=host-leaf" in env["OTEL_RESOURCE_ATTRIBUTES"]


@pytest.mark.anyio
async def test_the_root_is_read_only_when_telemetry_is_on_and_never_fails_a_start(
    tmp_path: Path,
) -> None:
    async def unreadable(_: Agent) -> list[Agent]:
        raise StoreError("the database is locked")

    off = make_settings(tmp_path)
    assert await claude_env.learn_root(off, agent("off-kid", "p"), unreadable) is None
    assert claude_env.for_agent(off, agent("off-kid", "p")) == {}
    on = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=ENDPOINT)
    assert await claude_env.learn_root(on, agent("odd-kid", "p"), unreadable) is None
    assert "TRACEPARENT" not in claude_env.for_agent(on, agent("odd-kid", "p"))

    async def none_found(_: Agent) -> list[Agent]:
        return []  # its parent is not in the store: the chain ends there

    assert await claude_env.learn_root(on, agent("lost-kid", "gone"), none_found) == "gone"
    # A root agent needs no look-up: its trace is its own.
    env = claude_env.for_agent(on, agent("a-root", None))
    assert env["TRACEPARENT"].startswith(f"00-{trace_id_of('a-root'):032x}-")
