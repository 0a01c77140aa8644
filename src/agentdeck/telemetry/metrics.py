"""The figures of ``/metrics`` pushed over OTLP/HTTP (protobuf) with the SDK's
MeterProvider: imported only when the push is on (``telemetry.push``).

Nothing is counted twice: observable instruments read one ``Reading`` taken on
the event loop just before each export — the store's figures
(``counts.read_gauges``, as ``/metrics`` reads them) and a copy of the follower's
``Tally``. The two waits are histograms, which cannot be observed: the Tally
tells the SDK's histogram each wait it takes in. The timer is ours (an asyncio
task), the export runs in a thread of its own, so a slow or dead collector never
holds the loop; the reader's own timer is off. The resource is the spans' own
(``service.name=agentdeck`` plus ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``).

Names: ``gen_ai.client.token.usage`` (the GenAI semantic conventions' token
count, here the deck's running total per ``gen_ai.token.type``), the rest
``agentdeck.*``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Histogram, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from agentdeck import __version__
from agentdeck.core.agent import AgentState
from agentdeck.telemetry.counts import WAIT_BUCKETS, Gauges, GaugeSource, Tally, read_gauges
from agentdeck.telemetry.resource import resource_attributes

logger = logging.getLogger(__name__)

STOP_DEADLINE = 5.0  # seconds the last push may take when the daemon stops


@dataclass(frozen=True)
class Reading:
    """What one export sends, taken at once on the loop (the callbacks run in
    the export's thread: they never see the Tally change under them)."""

    gauges: Gauges | None  # None: the store could not be read this time
    events: dict[str, int] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    approvals: dict[str, int] = field(default_factory=dict)
    asks: int = 0
    answers: dict[str, int] = field(default_factory=dict)
    merges: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, gauges: Gauges | None, tally: Tally) -> Reading:
        return cls(
            gauges, dict(tally.events), dict(tally.tool_calls), dict(tally.turns),
            dict(tally.approvals), tally.asks, dict(tally.answers), dict(tally.merges),
        )  # fmt: skip


Observe = Callable[[Reading], Iterable[Observation]]


def _by(key: str, values: Mapping[str, int | float]) -> list[Observation]:
    return [Observation(n, {key: label}) for label, n in sorted(values.items())]


def _store(read: Callable[[Gauges], Iterable[Observation]]) -> Observe:
    return lambda reading: read(reading.gauges) if reading.gauges is not None else ()


def _agents(g: Gauges) -> list[Observation]:
    by_state = g.sums.agents_by_state
    return [
        Observation(by_state.get(str(s), 0), {"agentdeck.agent.state": str(s)}) for s in AgentState
    ]


def _tokens(g: Gauges) -> list[Observation]:
    chat = {"gen_ai.operation.name": "chat"}
    return [
        Observation(g.sums.input_tokens, {**chat, "gen_ai.token.type": "input"}),
        Observation(g.sums.output_tokens, {**chat, "gen_ai.token.type": "output"}),
    ]


class OtlpMetrics:
    def __init__(
        self, exporter: MetricExporter, interval: float, deck: GaugeSource, tally: Tally
    ) -> None:
        self.deck = deck
        self.tally = tally
        self.interval = interval
        # math.inf: the reader starts no timer of its own; ours calls force_flush.
        self.reader = PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)
        self.provider = MeterProvider(
            metric_readers=[self.reader],
            # Resource.create adds OTEL_RESOURCE_ATTRIBUTES; the spans' own attributes.
            resource=Resource.create(resource_attributes()),
            shutdown_on_exit=False,  # stop() sends the last figures
        )
        self.reading = Reading(None)
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[tuple[list[Callable[[float], None]], Callable[[float], None]]] = []
        self._instruments(self.provider.get_meter("agentdeck", __version__))

    @classmethod
    def to(cls, url: str, interval: float, deck: GaugeSource, tally: Tally) -> OtlpMetrics:
        """The push to ``url`` every ``interval`` seconds (``push.PushConfig``'s)."""
        return cls(OTLPMetricExporter(endpoint=url), interval, deck, tally)

    def _instruments(self, meter: Meter) -> None:
        def observed(
            kind: Callable[..., object], name: str, unit: str, doc: str, read: Observe
        ) -> None:
            kind(name, callbacks=[self._callback(read)], unit=unit, description=doc)

        counter, gauge = meter.create_observable_counter, meter.create_observable_gauge
        updown = meter.create_observable_up_down_counter
        observed(updown, "agentdeck.agents", "{agent}", "Agents by state.", _store(_agents))
        observed(
            counter, "gen_ai.client.token.usage", "{token}", "Tokens the deck's agents used.",
            _store(_tokens),
        )  # fmt: skip
        observed(
            counter, "agentdeck.cost", "USD", "What the agents cost.",
            _store(lambda g: [Observation(g.sums.cost_usd)]),
        )  # fmt: skip
        observed(
            gauge, "agentdeck.event_log.last_id", "1", "The last event id in the log.",
            _store(lambda g: [Observation(g.sums.last_event_id)]),
        )  # fmt: skip
        observed(
            updown, "agentdeck.approvals.pending", "{request}", "Approval requests waiting.",
            _store(lambda g: [Observation(g.approvals)]),
        )  # fmt: skip
        observed(
            gauge, "agentdeck.approvals.oldest_wait", "s",
            "How long the oldest pending approval has waited.",
            _store(lambda g: [Observation(g.approval_oldest)]),
        )  # fmt: skip
        observed(
            updown, "agentdeck.asks.pending", "{question}", "Questions waiting.",
            _store(lambda g: [Observation(g.asks)]),
        )  # fmt: skip
        observed(
            gauge, "agentdeck.asks.oldest_wait", "s",
            "How long the oldest pending question has waited.",
            _store(lambda g: [Observation(g.ask_oldest)]),
        )  # fmt: skip
        observed(
            updown, "agentdeck.merge_queue.depth", "{merge}", "Merges queued or merging.",
            _store(lambda g: _by("agentdeck.merge.state", g.merges)),
        )  # fmt: skip
        observed(
            counter, "agentdeck.events.ingested", "{event}", "Events the daemon followed, by type.",
            lambda r: _by("agentdeck.event.type", r.events),
        )  # fmt: skip
        observed(
            counter, "agentdeck.tool_calls", "{call}", "Tool calls, by tool.",
            lambda r: _by("gen_ai.tool.name", r.tool_calls),
        )  # fmt: skip
        observed(
            counter, "agentdeck.turns", "{turn}", "Turns completed, by outcome.",
            lambda r: _by("agentdeck.turn.outcome", r.turns),
        )  # fmt: skip
        observed(
            counter, "agentdeck.approvals.resolved", "{request}",
            "Approval requests resolved, by decision.",
            lambda r: _by("agentdeck.approval.decision", r.approvals),
        )  # fmt: skip
        observed(
            counter, "agentdeck.asks", "{question}", "Questions asked.",
            lambda r: [Observation(r.asks)],
        )  # fmt: skip
        observed(
            counter, "agentdeck.asks.answered", "{question}", "Questions answered, by whom.",
            lambda r: _by("agentdeck.ask.by", r.answers),
        )  # fmt: skip
        observed(
            counter, "agentdeck.merges", "{merge}", "Merges finished, by outcome.",
            lambda r: _by("agentdeck.merge.outcome", r.merges),
        )  # fmt: skip
        self._told(
            self.tally.approval_wait.listeners,
            meter.create_histogram(
                "agentdeck.approval.wait", unit="s", description="How long approvals waited.",
                explicit_bucket_boundaries_advisory=list(WAIT_BUCKETS),
            ),
        )  # fmt: skip
        self._told(
            self.tally.ask_wait.listeners,
            meter.create_histogram(
                "agentdeck.ask.wait", unit="s", description="How long questions waited.",
                explicit_bucket_boundaries_advisory=list(WAIT_BUCKETS),
            ),
        )  # fmt: skip

    def _callback(self, read: Observe) -> Callable[[CallbackOptions], Iterable[Observation]]:
        return lambda _options: read(self.reading)

    def _told(self, listeners: list[Callable[[float], None]], histogram: Histogram) -> None:
        listeners.append(histogram.record)
        self._listeners.append((listeners, histogram.record))

    def start(self) -> None:
        self._task = asyncio.create_task(self._every_interval(), name="otlp-metrics")

    async def _every_interval(self) -> None:
        """A push starts every interval (from one start to the next, as the OTel
        spec has it); one that overran is followed by the next at once, never by a
        burst of the missed ones."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.interval
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            due = max(due + self.interval, loop.time())
            try:
                await self.push()
            except Exception:  # one failed push must not end the next ones
                logger.exception("metrics could not be pushed over OTLP")

    async def push(self) -> None:
        """Read the figures now and send them (from a thread of its own)."""
        try:
            gauges = await read_gauges(self.deck)
        except Exception:  # the store could not be read: the Tally's counts go alone
            logger.exception("metrics: the store's figures could not be read")
            gauges = None
        self.reading = Reading.of(gauges, self.tally)
        await _in_thread(self.reader.force_flush)

    async def stop(self) -> None:
        """Push once more (the store must still be open) and stop; a collector that
        does not answer holds this ``STOP_DEADLINE`` at most."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for listeners, listener in self._listeners:
            with contextlib.suppress(ValueError):
                listeners.remove(listener)
        self._listeners.clear()
        try:
            async with asyncio.timeout(STOP_DEADLINE):
                await self.push()
        except TimeoutError:
            logger.warning("the last metrics push did not end in %g s; not waiting", STOP_DEADLINE)
        try:
            async with asyncio.timeout(STOP_DEADLINE):
                await _in_thread(self.provider.shutdown)
        except TimeoutError:
            logger.warning("the metrics exporter did not stop in %g s; not waiting", STOP_DEADLINE)


async def _in_thread(call: Callable[[], object]) -> None:
    """``call`` in a daemon thread of its own: one stuck on a collector that never
    answers neither holds the loop nor keeps the process from exiting (the
    default executor's threads are joined when ``asyncio.run`` ends)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: Exception | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)

    def run() -> None:
        error: Exception | None = None
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting task
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, error)

    threading.Thread(target=run, name="agentdeck-otlp-metrics", daemon=True).start()
    await done
