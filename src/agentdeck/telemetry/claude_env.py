"""What an agent's Claude Code gets so its own telemetry joins the deck's: only
when telemetry is on (an OTLP endpoint is set).

Claude Code exports its metrics, events and (beta) traces to the same endpoint,
over OTLP/HTTP, with resource attributes naming the agent and the span that stands
for it in the deck's trace (``agentdeck.agent.id``, ``agentdeck.span_id``,
``agentdeck.trace_id``), and the W3C ``TRACEPARENT`` of that span when the agent's
tree is known in this process (the telemetry follower learns each spawned agent's
root; an agent run by a runner host on another machine gets the attributes only).
"""

from __future__ import annotations

import re
from collections import OrderedDict

from agentdeck.settings import Settings
from agentdeck.telemetry.ids import sampled, span_id_of, trace_id_of, traceparent

MAX_ROOTS = 10_000
_ROOTS: OrderedDict[str, str] = OrderedDict()  # agent id -> its tree's root (this process)


def remember_root(agent_id: str, root_id: str) -> None:
    _ROOTS[agent_id] = root_id
    _ROOTS.move_to_end(agent_id)
    while len(_ROOTS) > MAX_ROOTS:
        _ROOTS.popitem(last=False)


def root_of(agent_id: str) -> str | None:
    return _ROOTS.get(agent_id)


_PLAIN = re.compile(r"[^A-Za-z0-9._:/-]")


def _value(text: str) -> str:
    """A resource attribute's value as OTEL_RESOURCE_ATTRIBUTES carries it (no
    separator, no space: what is not plain is percent-encoded)."""
    return _PLAIN.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def claude_env(settings: Settings, agent_id: str | None) -> dict[str, str]:
    """The environment for an agent's Claude Code: empty when telemetry is off."""
    endpoint = settings.otel_endpoint
    if not endpoint:
        return {}
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_TRACES_EXPORTER": "otlp",
    }
    attrs = {"service.namespace": "agentdeck"}
    if agent_id is not None:
        own = span_id_of(agent_id)
        attrs["agentdeck.agent.id"] = agent_id
        attrs["agentdeck.span_id"] = f"{own:016x}"
        root = root_of(agent_id)
        if root is not None:
            trace_id = trace_id_of(root)
            attrs["agentdeck.trace_id"] = f"{trace_id:032x}"
            traced = sampled(trace_id, settings.otel_sample_ratio)
            env["TRACEPARENT"] = traceparent(trace_id, own, is_sampled=traced)
    env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(f"{k}={_value(v)}" for k, v in attrs.items())
    return env
