"""``GET /metrics``: the deck in Prometheus' text format, behind the API's token
(a viewer's: ``Authorization: Bearer <token>`` in the scrape config).

Present whether OTLP export is on or off: what it shows is read at each scrape
from the store (agents by state, tokens and cost, approvals and asks pending and
how long the oldest waits, the merge queue) and from the counts the telemetry
follower keeps since the daemon started (events ingested, tool calls, turns,
approvals resolved and asks answered with their waits, merge outcomes).
prometheus-client is imported at the first scrape, not before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from agentdeck.core.agent import AgentState
from agentdeck.daemon.deck import Deck
from agentdeck.telemetry.counts import Gauges, read_gauges
from agentdeck.telemetry.service import running

if TYPE_CHECKING:
    from agentdeck.telemetry.counts import Histogram, Tally

router = APIRouter()


class _Families:
    """prometheus-client's collector protocol over one scrape's figures."""

    def __init__(
        self,
        snap: Gauges,
        tally: Tally | None,
        exporting: bool,
        dropped: int = 0,
        restarts: int = 0,
    ) -> None:
        self.snap = snap
        self.tally = tally
        self.exporting = exporting
        self.dropped = dropped
        self.restarts = restarts

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        snap, stats = self.snap, self.snap.sums
        agents = GaugeMetricFamily("agentdeck_agents", "Agents by state.", labels=["state"])
        for state in AgentState:
            agents.add_metric([str(state)], stats.agents_by_state.get(str(state), 0))
        yield agents
        tokens = CounterMetricFamily(
            "agentdeck_tokens", "Tokens the deck's agents used.", labels=["direction"]
        )
        tokens.add_metric(["input"], stats.input_tokens)
        tokens.add_metric(["output"], stats.output_tokens)
        yield tokens
        yield CounterMetricFamily("agentdeck_cost_usd", "What the agents cost.", stats.cost_usd)
        yield GaugeMetricFamily(
            "agentdeck_event_log_last_id", "The last event id in the log.", stats.last_event_id
        )
        yield GaugeMetricFamily(
            "agentdeck_approvals_pending", "Approval requests waiting.", snap.approvals
        )
        yield GaugeMetricFamily(
            "agentdeck_approval_oldest_wait_seconds",
            "How long the oldest pending approval has waited.",
            snap.approval_oldest,
        )
        yield GaugeMetricFamily("agentdeck_asks_pending", "Questions waiting.", snap.asks)
        yield GaugeMetricFamily(
            "agentdeck_ask_oldest_wait_seconds",
            "How long the oldest pending question has waited.",
            snap.ask_oldest,
        )
        depth = GaugeMetricFamily(
            "agentdeck_merge_queue_depth", "Merges queued or merging.", labels=["state"]
        )
        for merge_state, n in snap.merges.items():
            depth.add_metric([merge_state], n)
        yield depth
        yield GaugeMetricFamily(
            "agentdeck_otlp_exporting", "1 when traces are exported over OTLP.", int(self.exporting)
        )
        yield CounterMetricFamily(
            "agentdeck_otlp_span_records_dropped",
            "Records of spans dropped on their way to the exporter (it was gone or behind).",
            self.dropped,
        )
        yield CounterMetricFamily(
            "agentdeck_otlp_span_exporter_restarts",
            "Span exporter processes started again after one ended on its own.",
            self.restarts,
        )
        if self.tally is not None:
            yield from self._since_start(self.tally)

    def _since_start(self, tally: Tally) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        def counter(name: str, doc: str, label: str, values: dict[str, int]) -> Any:
            family = CounterMetricFamily(name, doc, labels=[label])
            for key, n in sorted(values.items()):
                family.add_metric([key], n)
            return family

        yield counter(
            "agentdeck_events_ingested",
            "Events the daemon followed, by type.",
            "type",
            tally.events,
        )
        yield counter("agentdeck_tool_calls", "Tool calls, by tool.", "tool", tally.tool_calls)
        yield counter("agentdeck_turns", "Turns completed, by outcome.", "outcome", tally.turns)
        yield counter(
            "agentdeck_approvals_resolved",
            "Approval requests resolved, by decision.",
            "decision",
            tally.approvals,
        )
        yield _histogram(
            "agentdeck_approval_wait_seconds", "How long approvals waited.", tally.approval_wait
        )
        yield CounterMetricFamily("agentdeck_asks", "Questions asked.", tally.asks)
        yield counter(
            "agentdeck_asks_answered", "Questions answered, by whom.", "by", tally.answers
        )
        yield _histogram("agentdeck_ask_wait_seconds", "How long questions waited.", tally.ask_wait)
        yield counter("agentdeck_merges", "Merges finished, by outcome.", "outcome", tally.merges)


def _histogram(name: str, doc: str, hist: Histogram) -> Any:
    from prometheus_client.core import HistogramMetricFamily

    return HistogramMetricFamily(name, doc, buckets=hist.cumulative(), sum_value=hist.total)


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    deck: Deck = request.app.state.deck
    telemetry = running(deck)
    snap = await read_gauges(deck)
    registry = CollectorRegistry(auto_describe=False)
    tally = telemetry.tally if telemetry is not None else None
    exporting = telemetry is not None and telemetry.exporting
    dropped = telemetry.dropped if telemetry is not None else 0
    restarts = telemetry.restarts if telemetry is not None else 0
    registry.register(_Families(snap, tally, exporting, dropped, restarts))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
