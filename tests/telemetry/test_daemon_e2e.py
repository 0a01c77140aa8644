"""Telemetry as a user turns it on: the real daemon, the real Claude Code CLI on
the scripted model, an orchestrator and its child. A real OTLP/HTTP receiver (a
small HTTP server decoding ``ExportTraceServiceRequest`` with opentelemetry-proto)
gets one trace with the child under the turn that spawned it; ``/metrics`` is
parsed with prometheus-client's parser and refused without a token."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from agentdeck.core.agent import AgentState
from agentdeck.telemetry.ids import span_id_of, trace_id_of
from tests.conftest import make_settings
from tests.support.receiver import Received, Receiver
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

KEY = "sk-ant-api03-" + "Zq9Xw" * 18

WAIT = {"tool_use": {"name": "mcp__deck__wait_for_agents", "input": {"agents": ["kid"]}}}
SCENARIO = {
    "name": "traced",
    "description": "an orchestrator, one child that writes a file holding a secret",
    "turns": [
        {"reply": [{"tool_use": {"name": "mcp__deck__spawn_agent", "input": {
            "prompt": "TRACED-CHILD: write the notes", "template": "engineer", "name": "kid"}}}]},
        {"reply": [WAIT]},
        {"when": {"tool_result_matches": "wait_for_agents: (woken|still waiting)"}, "repeat": True,
         "reply": [WAIT]},
        {"when": {"tool_result_contains": "wait_for_agents: done"},
         "reply": [{"text": "TRACED-REPORT: the child finished."}]},
    ],
    "conversations": [
        {"when": {"first_user_text_contains": "TRACED-CHILD"}, "turns": [
            {"reply": [{"tool_use": {"name": "Write", "input": {
                "file_path": "notes.txt", "content": f"key = {KEY}\n"}}}]},
            # Held a while: the test reads its Claude Code's environment meanwhile.
            {"delay": 4, "reply": [{"text": "TRACED-CHILD-DONE"}]},
        ]},
    ],
}  # fmt: skip


def service_of(resource: Any) -> str:
    names = [kv.value.string_value for kv in resource.attributes if kv.key == "service.name"]
    return names[0] if names else ""


def from_service(received: list[Received], service: str = "agentdeck") -> list[Received]:
    """What ``service`` sent: the agents' own Claude Code exports its traces, logs and
    metrics to the same endpoint (``service.name=claude-code``), when it gets to."""
    kinds: dict[str, tuple[Any, str]] = {
        "/v1/traces": (ExportTraceServiceRequest, "resource_spans"),
        "/v1/metrics": (ExportMetricsServiceRequest, "resource_metrics"),
        "/v1/logs": (ExportLogsServiceRequest, "resource_logs"),
    }
    out = []
    for got in received:
        kind, field = kinds[got.path]
        body = got.body
        if got.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        groups = getattr(kind.FromString(body), field)
        if any(service_of(group.resource) == service for group in groups):
            out.append(got)
    return out


def spans_of(
    bodies: list[tuple[dict[str, str], bytes]], service: str = "agentdeck"
) -> tuple[list[Any], list[Any]]:
    """Every span of ``service`` the receiver got, and every resource they came with."""
    spans, resources = [], []
    for headers, body in bodies:
        if headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            if service_of(resource_spans.resource) != service:
                continue
            resources.append(resource_spans.resource)
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    return spans, resources


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


async def settled(served: Served, ref: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            found: dict[str, Any] = (await api.get(f"/api/agents/{ref}")).json()
        done = not AgentState(found["state"]).is_busy and found["turns"] > 0
        return found if done and found["extra"].get("last_result") else None

    return await eventually(probe, timeout=120, what=f"agent {ref} to finish")


async def claude_code_env_of_child(served: Served, boss_id: str) -> dict[str, str]:
    """The environment of the child's Claude Code process, read while it runs."""

    async def probe() -> dict[str, str] | None:
        async with served.api() as api:
            listed = (await api.get("/api/agents", params={"parent": boss_id})).json()
        pids = [a["pid"] for a in listed["agents"] if a.get("pid")]
        try:
            raw = Path(f"/proc/{pids[0]}/environ").read_bytes() if pids else b""
        except OSError:  # between two processes
            return None
        env = dict(e.split("=", 1) for e in raw.decode().split("\0") if "=" in e)
        return env if "AGENTDECK_AGENT_ID" in env else None

    return await eventually(probe, timeout=120, what="the child's Claude Code")


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_an_orchestrated_run_is_one_trace_and_the_deck_is_scraped(tmp_path: Path) -> None:
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.server.server_address[1]}"
    settings = make_settings(tmp_path, AGENTDECK_OTEL_ENDPOINT=endpoint)
    scenario = tmp_path / "traced.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    try:
        async with serving(settings) as served, served.api() as api:
            created = await api.post(
                "/api/agents",
                json={"prompt": "lead", "agent": "orchestrator", "scenario": str(scenario),
                      "name": "boss"},
            )  # fmt: skip
            assert created.status_code == 201, created.text
            boss = created.json()
            kid_env = await claude_code_env_of_child(served, boss["id"])
            final = await settled(served, boss["id"])
            assert final["extra"]["last_result"] == "TRACED-REPORT: the child finished."
            (kid,) = (await api.get("/api/agents", params={"parent": boss["id"]})).json()["agents"]
            kid_events = (await api.get("/api/events", params={"agent": kid["id"]})).json()
            assert KEY not in str(kid_events)  # the log the spans are built from is scrubbed

            scraped = await api.get("/metrics")
            assert scraped.status_code == 200, scraped.text
            assert scraped.headers["content-type"].startswith("text/plain")
            values = metric_values(scraped.text)
            states = {k[1][0][1]: v for k, v in values.items() if k[0] == "agentdeck_agents"}
            assert states[kid["state"]] >= 1 and states[final["state"]] >= 1, scraped.text
            assert values[("agentdeck_tool_calls_total", (("tool", "Write"),))] == 1
            assert values[("agentdeck_events_ingested_total", (("type", "agent_spawned"),))] == 2
            assert values[("agentdeck_otlp_exporting", ())] == 1
            assert values[("agentdeck_otlp_span_records_dropped_total", ())] == 0
            assert values[("agentdeck_tokens_total", (("direction", "output"),))] > 0
            assert values[("agentdeck_merge_queue_depth", (("state", "queued"),))] == 0
            assert ("agentdeck_approval_wait_seconds_count", ()) in values
            url = f"{served.info.url}/metrics"
            async with httpx.AsyncClient() as anonymous:
                assert (await anonymous.get(url)).status_code == 401
                wrong = {"Authorization": "Bearer not-the-token"}
                assert (await anonymous.get(url, headers=wrong)).status_code == 401
    finally:
        receiver.close()

    # The child's Claude Code was started in its place in the tree's trace.
    trace_hex, kid_hex = f"{trace_id_of(boss['id']):032x}", f"{span_id_of(kid['id']):016x}"
    assert kid_env["TRACEPARENT"] == f"00-{trace_hex}-{kid_hex}-01"
    assert f"agentdeck.agent.id={kid['id']}" in kid_env["OTEL_RESOURCE_ATTRIBUTES"]

    # (The daemon's own metrics, when pushed, go to /v1/metrics.)
    received = [(r.headers, r.body) for r in receiver.received if r.path == "/v1/traces"]
    assert received
    spans, resources = spans_of(received)
    assert resources
    trace = trace_id_of(boss["id"]).to_bytes(16, "big")
    assert {s.trace_id for s in spans} == {trace}
    # The agents' Claude Code, where it exported before the end, joined the same trace.
    theirs, _ = spans_of(received, service="claude-code")
    assert {s.trace_id for s in theirs} <= {trace}
    agents = {span_id_of(a["id"]).to_bytes(8, "big") for a in (boss, kid)}
    roots = [s for s in theirs if s.name == "claude_code.interaction"]
    assert all(s.parent_span_id in agents for s in roots), [s.parent_span_id for s in roots]
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans), "a span was exported twice"
    boss_span = by_id[span_id_of(boss["id"]).to_bytes(8, "big")]
    kid_span = by_id[span_id_of(kid["id"]).to_bytes(8, "big")]
    assert boss_span.name == "invoke_agent boss" and boss_span.parent_span_id == b""
    assert attributes(boss_span)["agentdeck.template"] == "orchestrator"
    assert attributes(kid_span)["agentdeck.parent.id"] == boss["id"]
    assert attributes(kid_span)["gen_ai.agent.name"] == "kid"
    ended = attributes(kid_span)
    # A child that finished is over (its final state); one still idle when the daemon
    # stopped is cut there.
    assert ended.get("agentdeck.state") == kid["state"] or ended["agentdeck.span.cut"] is True, (
        kid["state"],
        ended,
    )
    spawning_turn = by_id[kid_span.parent_span_id]
    assert spawning_turn.name == "turn" and spawning_turn.parent_span_id == boss_span.span_id
    assert [link.span_id for link in spawning_turn.links] == [kid_span.span_id]
    spawn_call = next(s for s in spans if s.name == "execute_tool mcp__deck__spawn_agent")
    assert spawn_call.parent_span_id == spawning_turn.span_id
    write = next(s for s in spans if s.name == "execute_tool Write")
    assert by_id[write.parent_span_id].parent_span_id == kid_span.span_id
    arguments = attributes(write)["gen_ai.tool.call.arguments"]
    assert "notes.txt" in arguments and "[REDACTED:" in arguments and KEY not in arguments
    assert KEY.encode() not in b"".join(body for _, body in received)
