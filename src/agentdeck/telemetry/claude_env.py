"""What an agent's Claude Code gets so its own telemetry joins the deck's: only
when telemetry is on (an OTLP endpoint is set).

Claude Code exports its metrics, events and (beta) traces to the same endpoint,
over OTLP/HTTP, with resource attributes naming the agent and the span that stands
for it in the deck's trace (``agentdeck.agent.id``, ``agentdeck.span_id``,
``agentdeck.trace_id``), and the W3C ``TRACEPARENT`` of that span. Ids come from
agent ids (``telemetry.ids``), so the process that starts an agent — the daemon, or
a runner host whose tree another node traces — computes them from the agent's
ancestry in the store (``learn_root``, as its session starts), with no telemetry
state shared.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from agentdeck.core.agent import Agent
from agentdeck.errors import AgentdeckError
from agentdeck.settings import Settings
from agentdeck.telemetry.ids import sampled, span_id_of, trace_id_of, traceparent

logger = logging.getLogger(__name__)

MAX_ROOTS = 10_000
_ROOTS: OrderedDict[str, str] = OrderedDict()  # agent id -> its tree's root (this process)

Ancestors = Callable[[Agent], Awaitable[list[Agent]]]  # parent first (Governor.ancestors)


def remember_root(agent_id: str, root_id: str) -> None:
    _ROOTS[agent_id] = root_id
    _ROOTS.move_to_end(agent_id)
    while len(_ROOTS) > MAX_ROOTS:
        _ROOTS.popitem(last=False)


def root_of(agent_id: str) -> str | None:
    return _ROOTS.get(agent_id)


async def learn_root(settings: Settings, agent: Agent, ancestors: Ancestors) -> str | None:
    """The root of ``agent``'s tree, read up its parent chain (``ancestors``, the
    store's) and remembered for ``for_agent``; None when telemetry is off (nothing is
    read then) or the chain could not be read (the agent then starts without a
    trace context rather than not at all). An ancestor missing from the store ends
    the chain there, as the trace builder's walk does (``service``)."""
    if not settings.otel_endpoint:
        return None
    known = root_of(agent.id)
    if known is not None:
        return known
    if agent.parent_id is None:
        root = agent.id
    else:
        try:
            chain = await ancestors(agent)
        except AgentdeckError:  # a store that cannot be read now: no trace context, no failure
            logger.warning("agent %s: its tree's root could not be read", agent.id, exc_info=True)
            return None
        top = chain[-1] if chain else None
        root = agent.parent_id if top is None else (top.parent_id or top.id)
    remember_root(agent.id, root)
    return root


_PLAIN = re.compile(r"[^A-Za-z0-9._:/-]")


def _value(text: str) -> str:
    """A resource attribute's value as OTEL_RESOURCE_ATTRIBUTES carries it (no
    separator, no space: what is not plain is percent-encoded)."""
    return _PLAIN.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def for_agent(settings: Settings, agent: Agent) -> dict[str, str]:
    """The environment for ``agent``'s Claude Code (empty when telemetry is off),
    named by its own id even when its processes carry another (a runner host's warm
    process: ``procs.CARRIED``). A root agent's trace is its own; a child's is its
    root's once ``learn_root`` has read it."""
    root = root_of(agent.id) or (agent.id if agent.parent_id is None else None)
    return claude_env(settings, agent.id, root_id=root)


def claude_env(
    settings: Settings, agent_id: str | None, *, root_id: str | None = None
) -> dict[str, str]:
    """The environment for an agent's Claude Code: empty when telemetry is off.
    ``TRACEPARENT`` only when its tree's root is known (``root_id``, or remembered)."""
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
        root = root_id or root_of(agent_id)
        if root is not None:
            trace_id = trace_id_of(root)
            attrs["agentdeck.trace_id"] = f"{trace_id:032x}"
            traced = sampled(trace_id, settings.otel_sample_ratio)
            env["TRACEPARENT"] = traceparent(trace_id, own, is_sampled=traced)
    env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(f"{k}={_value(v)}" for k, v in attrs.items())
    return env
