"""The ``Tracer`` reading the log itself (``records``): records say how far the log
is settled and, where they fall, the roots looked up; the events are read in that
order. A read that fails is kept and tried again, losing nothing; an event the
builder fails on is passed and kept for the worker to say."""

from __future__ import annotations

from collections.abc import Sequence

from agentdeck.core.event_types import StoredEvent
from agentdeck.telemetry.records import CLOSE, FROM, ROOT, UPTO, Tracer
from agentdeck.telemetry.spans import SpanData


class Kept:
    def __init__(self) -> None:
        self.spans: list[SpanData] = []

    def export(self, spans: list[SpanData]) -> None:
        self.spans.extend(spans)

    def flush(self) -> None:
        return

    def shutdown(self) -> None:
        return


class Log:
    """A log in memory; ``down`` makes its reads fail."""

    def __init__(self, events: list[StoredEvent]) -> None:
        self.events_ = events
        self.down = False
        self.reads: list[tuple[int, int]] = []

    def events(
        self, *, after: int, upto: int, types: Sequence[str], limit: int
    ) -> list[StoredEvent]:
        if self.down:
            raise OSError("the database is away")
        self.reads.append((after, upto))
        found = [e for e in self.events_ if after < e.id <= upto and e.type in types]
        return found[:limit]


def tree() -> list[StoredEvent]:
    spec = {"model": "m", "prompt": "secret plans"}
    return [
        StoredEvent(11, "boss", "agent_spawned", 1.0, {"name": "boss", "spec": spec}),
        StoredEvent(12, "boss", "assistant_text", 1.0, {"text": "hi"}),
        StoredEvent(13, "kid", "agent_spawned", 2.0,
                    {"name": "kid", "spec": spec, "parent_id": "boss"}),
        StoredEvent(14, "kid", "tool_called", 2.0,
                    {"tool_use_id": "t", "tool": "Read", "input": {"file_path": "a"}}),
        StoredEvent(15, "kid", "tool_returned", 3.0,
                    {"tool_use_id": "t", "output": "x", "size": 1}),
        StoredEvent(16, "kid", "state_changed", 4.0, {"old": "running", "new": "done"}),
    ]  # fmt: skip


def test_the_log_is_read_up_to_each_record_then_to_where_it_is_settled() -> None:
    sink, log = Kept(), Log(tree())
    tracer = Tracer(sink, 1.0, log)
    for record in [(FROM, 10), (UPTO, 12), (ROOT, "kid", "boss"), (UPTO, 16)]:
        tracer.apply(record)
    assert log.reads == [(10, 12)]  # before the root; the rest waits to be asked
    assert tracer.behind() == 4
    tracer.catch_up()
    assert log.reads == [(10, 12), (12, 16)] and tracer.behind() == 0
    names = [s.name for s in sink.spans]
    assert names == ["execute_tool Read", "turn", "invoke_agent kid"]
    assert all("secret plans" not in repr(s.attributes) for s in sink.spans)


def test_a_read_that_fails_is_kept_and_tried_again_losing_nothing() -> None:
    sink, log = Kept(), Log(tree())
    tracer = Tracer(sink, 1.0, log)
    tracer.apply((FROM, 10))
    tracer.apply((UPTO, 16))
    log.down = True
    tracer.catch_up()
    assert isinstance(tracer.read_error, OSError) and tracer.behind() == 6
    assert sink.spans == []
    log.down, tracer.read_error = False, None
    tracer.catch_up()
    assert tracer.read_error is None and tracer.behind() == 0
    assert "invoke_agent kid" in [s.name for s in sink.spans]


def test_an_event_the_builder_fails_on_is_passed_and_kept() -> None:
    events = tree()
    events[2] = StoredEvent(13, "kid", "agent_spawned", 2.0, {"name": "kid", "spec": ["odd"]})
    sink, log = Kept(), Log(events)
    tracer = Tracer(sink, 1.0, log)
    for record in [(FROM, 10), (UPTO, 16), (CLOSE, 9.0)]:
        tracer.apply(record)
    assert [event_id for event_id, _ in tracer.odd] == [13]
    assert tracer.behind() == 0
    assert [s.name for s in sink.spans] == ["turn", "invoke_agent boss"]  # the rest went on


def test_no_from_yet_reads_nothing() -> None:
    log = Log(tree())
    tracer = Tracer(Kept(), 1.0, log)
    tracer.apply((UPTO, 16))
    tracer.catch_up()
    assert log.reads == [] and tracer.behind() == 0
