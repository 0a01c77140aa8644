"""The log's events as the trace builder needs them: compact records, and the
``Tracer`` that turns them into spans. Pure: no telemetry library, no I/O.

The daemon's follower (``service``) sends no event: it says how far the log is
settled (``UPTO``), and the facts it looked up in the deck where they fall in the
log (an agent's tree's root; an agent met mid-life). The ``Tracer`` reads the
events itself from the log (a ``LogReader``: ``store.feed`` in the exporter's own
process, ``worker``, fed over a pipe by ``child``; or, in tests, in this one),
only those that make or end a span, cut to the fields the builder reads (a
tool's output, a message's text, a prompt are left behind).

A record is a tuple:

- ``(FROM, id)``: the log is read after event ``id`` (the follower's start);
- ``(UPTO, id)``: the log is settled up to event ``id``: its events are read
  before any record that comes after this one is applied;
- ``(ROOT, agent_id, root_id)``: the root of a newly spawned agent's tree;
- ``(ADOPT, agent_dict, root_id, since)``: an agent first met mid-life;
- ``(EVENT, id, agent_id, type, ts, data)``: an event, ``data`` cut to ``KEEP``
  (what the log's events become; tests send them directly);
- ``(CLOSE, ts)``: the daemon stops: what is open ends, cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agentdeck.core.agent import Agent
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.telemetry.spans import SpanData
from agentdeck.telemetry.trace import TraceBuilder

EVENT, ROOT, ADOPT, CLOSE, FLUSH = "e", "root", "adopt", "close", "flush"
FROM, UPTO = "from", "upto"
Record = tuple[Any, ...]
PAGE = 2000  # events read from the log at a time

# The event types that make, change or end a span, and the fields read of each
# (None: all of them, none of which is long; texts, outputs, prompts are left).
KEEP: dict[str, tuple[str, ...] | None] = {
    EventType.AGENT_SPAWNED: ("name", "parent_id", "spec"),
    EventType.STATE_CHANGED: None,
    EventType.USER_MESSAGE_SENT: (),
    EventType.ASSISTANT_TEXT: (),
    EventType.TOOL_CALLED: None,  # its id, tool, input (cut by the builder), outer call
    EventType.TOOL_RETURNED: ("tool_use_id", "is_error", "size"),
    EventType.PERMISSION_REQUESTED: ("request_id", "tool", "reason"),
    EventType.PERMISSION_RESOLVED: None,
    EventType.QUESTION_ASKED: ("ask_id", "to_agent_id"),
    EventType.QUESTION_ANSWERED: ("ask_id", "by"),
    EventType.COST_UPDATED: None,
    EventType.TURN_COMPLETED: (
        "subtype",
        "is_error",
        "terminal_reason",
        "session_id",
        "cost_usd",
        "duration_ms",
        "input_tokens",
        "output_tokens",
    ),  # fmt: skip
    EventType.ERROR_OCCURRED: ("message",),
    EventType.NOTICE: ("kind", "detail"),  # merges only (``spanned``)
}
_SPEC = ("model", "template", "profile", "owner", "project")  # of a spawned agent's spec
NO_SPAN = ("",)  # ``spanned``: the event makes no span


def spanned(event: StoredEvent) -> tuple[str, ...] | None:
    """The fields of ``event`` a span needs (None: all); ``NO_SPAN``: it makes none."""
    keep = KEEP.get(event.type, NO_SPAN)
    if event.type == EventType.NOTICE and not str(event.data.get("kind", "")).startswith("merge"):
        return NO_SPAN
    return keep


def event_record(event: StoredEvent, keep: tuple[str, ...] | None) -> Record:
    data = event.data
    if keep is not None:
        data = {k: data[k] for k in keep if k in data}
        spec = data.get("spec")
        if isinstance(spec, dict):  # a spawned agent's: its prompt is left
            data["spec"] = {k: spec[k] for k in _SPEC if k in spec}
    return (EVENT, event.id, event.agent_id, event.type, event.ts, data)


LOG_TYPES = tuple(str(t) for t in KEEP)  # what is read of the log


class LogReader(Protocol):
    """The event log, read (``store.feed``)."""

    def events(
        self, *, after: int, upto: int, types: Sequence[str], limit: int
    ) -> list[StoredEvent]: ...


class SpanSink(Protocol):
    """Where finished spans go (``telemetry.otlp``)."""

    def export(self, spans: list[SpanData]) -> None: ...

    def flush(self) -> None:
        """Send what is queued now (blocking)."""
        ...

    def shutdown(self) -> None:
        """Send what is left and stop (blocking)."""
        ...


class Tracer:
    """Records in, spans out to ``sink``; the events read from ``log`` (None: only
    the records' own events are traced)."""

    def __init__(self, sink: SpanSink, ratio: float = 1.0, log: LogReader | None = None) -> None:
        self.sink = sink
        self.builder = TraceBuilder(ratio)
        self.log = log
        self.position: int | None = None  # the last event of the log traced (None: no FROM yet)
        self.settled = 0  # how far the log is said settled
        self.read_error: Exception | None = None  # the last read of the log that failed
        self.odd: list[tuple[int, Exception]] = []  # events the builder failed on

    def apply(self, record: Record) -> None:
        kind = record[0]
        if kind == UPTO:
            self.settled = max(self.settled, record[1])
            return
        if kind == FROM:
            self.position = self.settled = record[1]
            return
        self.catch_up()  # what the log holds before this record, first
        self._trace(record)

    def behind(self) -> int:
        """Events of the log said settled and not read yet (at most)."""
        return 0 if self.position is None else self.settled - self.position

    def catch_up(self) -> None:
        """Trace the log's events up to where it is said settled. A read that fails
        is kept in ``read_error`` and tried again at the next call; an event the
        builder fails on, in ``odd``, and passed."""
        if self.log is None or self.position is None:
            return
        while self.position < self.settled:
            try:
                page = self.log.events(
                    after=self.position, upto=self.settled, types=LOG_TYPES, limit=PAGE
                )
            except Exception as exc:  # noqa: BLE001 - said by the worker; read again later
                self.read_error = exc
                return
            for event in page:
                keep = spanned(event)
                if keep is NO_SPAN:
                    continue
                try:
                    self._trace(event_record(event, keep))
                except Exception as exc:  # noqa: BLE001 - one odd event must not end the rest
                    self.odd.append((event.id, exc))
            self.position = page[-1].id if len(page) == PAGE else self.settled

    def _trace(self, record: Record) -> None:
        kind = record[0]
        if kind == EVENT:
            _, event_id, agent_id, event_type, ts, data = record
            spans = self.builder.feed(StoredEvent(event_id, agent_id, event_type, ts, data))
        elif kind == ROOT:
            self.builder.learn_root(record[1], record[2])
            return
        elif kind == ADOPT:
            _, agent, root, since = record
            self.builder.adopt(Agent.from_dict(agent), root, since)
            return
        elif kind == CLOSE:
            spans = self.builder.close(record[1])
        else:
            return
        if spans:
            self.sink.export(spans)
