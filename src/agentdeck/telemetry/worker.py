"""The span exporter's process (``python -m agentdeck.telemetry.worker``), started
by the daemon (``telemetry.child``) when OTLP export is on.

It reads frames from its stdin — first the settings it needs, then lists of
records (``telemetry.records``) — reads the events the records say are settled
from the deck's database itself (``store.feed``: the daemon sends none), builds
the spans and sends them over OTLP/HTTP (``telemetry.otlp``) in batches, at least
every ``SEND_SECONDS`` while spans wait.
A flush record is answered on stdout once what came before it is sent. The end
of its stdin (the daemon stopped, or died) sends what is left and ends it.

It keeps out of the daemon's way, on the CPU and in time. On the CPU it runs under
``SCHED_IDLE`` (else niced): it gets only what the daemon's threads leave. In time,
it reads the pipe as frames come (a copy) but builds and posts their spans only in
the daemon's pauses — the pipe quiet for ``QUIET`` — or once frames have waited
``HOLD`` or ``HOLD_BYTES`` of them are read: a burst of events (agents starting at
once, a fast tool loop) is ingested without the exporter's work beside it, on a
machine whose cores share caches, and its spans follow within ``HOLD`` (as long as
the SDK's own batch processor waits). Holding costs no memory to speak of: the
frames are small, the events wait in the log. ``benchmarks/telemetry.py`` measures it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdeck.telemetry.child import HEADER
from agentdeck.telemetry.records import FLUSH, PAGE, Tracer

if TYPE_CHECKING:
    from agentdeck.store.feed import LogFeed

logger = logging.getLogger("agentdeck.telemetry.worker")

NICENESS = 19  # where SCHED_IDLE is not to be had
SEND_SECONDS = 1.0  # the longest a finished span waits for its batch
READ_BYTES = 1 << 20
QUIET = 0.05  # the pipe idle this long: the daemon is between bursts
HOLD = 5.0  # the longest frames wait while the daemon is busy (as the SDK batches)
HOLD_BYTES = 8 << 20  # frames read and not yet worked on, at most


def frames(fd: int, idle: float) -> Iterator[Any]:
    """The payloads of the frames read from ``fd``, handed on in the writer's pauses
    (see the module); None after ``idle`` seconds with nothing to hand on. Ends with
    the input, after what was read."""
    buffer = bytearray()
    since: float | None = None  # when the oldest frame not handed on was read
    while True:
        if since is None:
            wait = idle
        elif time.monotonic() - since >= HOLD or len(buffer) >= HOLD_BYTES:
            wait = 0.0
        else:
            wait = QUIET
        ready = select.select([fd], [], [], wait)[0] if wait else []
        if ready:
            chunk = os.read(fd, READ_BYTES)
            if not chunk:
                yield from _complete(buffer)
                return
            buffer += chunk
            if since is None:
                since = time.monotonic()
            continue
        handed = False
        for payload in _complete(buffer):
            handed = True
            yield payload
        since = time.monotonic() if buffer else None  # a frame's start, its rest to come
        if not handed:
            yield None


def _complete(buffer: bytearray) -> Iterator[Any]:
    """The whole frames at the start of ``buffer``, taken out of it."""
    start = 0
    while len(buffer) - start >= HEADER.size:
        (size,) = HEADER.unpack_from(buffer, start)
        if len(buffer) - start < HEADER.size + size:
            break
        body = bytes(buffer[start + HEADER.size : start + HEADER.size + size])
        start += HEADER.size + size
        yield pickle.loads(body)  # our parent's own frames, over our own pipe
    del buffer[:start]


def run(fd: int = 0, out: int = 1) -> None:
    from agentdeck.telemetry.otlp import OtlpSink  # the SDK: here only

    incoming = frames(fd, SEND_SECONDS)
    config = next((p for p in incoming if p is not None), None)
    if config is None:
        return
    sink = OtlpSink.to(config["endpoint"], config.get("resource"))
    log = _open_log(config.get("database"))
    tracer = Tracer(sink, config["ratio"], log)
    sent = time.monotonic()
    failing = False  # the log's reads fail: said once until one works again
    try:
        for payload in incoming:
            for record in payload or ():
                if record[0] == FLUSH:
                    tracer.catch_up()
                    sink.flush()
                    os.write(out, b"flushed\n")
                    continue
                try:
                    tracer.apply(record)
                except Exception:  # one odd record must not end the traces of all
                    logger.exception("a record could not be traced: %.200r", record)
            if payload is None or tracer.behind() >= PAGE:  # a pause, or a page to read
                tracer.catch_up()
            failing = _say(tracer, failing)
            if sink.pending and time.monotonic() - sent >= SEND_SECONDS:
                sink.flush()
            if not sink.pending:
                sent = time.monotonic()
        tracer.catch_up()
        _say(tracer, failing)
    finally:
        if log is not None:
            log.close()
    sink.shutdown()
    if sink.failed:
        logger.warning("%d spans were not taken by the collector", sink.failed)


def _open_log(database: str | None) -> LogFeed | None:
    """The deck's database, read only (None: the daemon sends the events itself)."""
    if not database:
        return None
    from agentdeck.store.feed import LogFeed

    return LogFeed(database)


def _say(tracer: Tracer, failing: bool) -> bool:
    """What went wrong since last said, said (a failing read once per streak)."""
    for event_id, exc in tracer.odd:
        logger.error("event %d could not be traced: %s", event_id, exc, exc_info=exc)
    tracer.odd.clear()
    error, tracer.read_error = tracer.read_error, None
    if error is None:
        return failing if tracer.behind() else False
    if not failing:
        logger.error("%s (tried again)", error)
    return True


def yield_to_the_daemon() -> str:
    """Run only on CPU nobody else wants (Linux's SCHED_IDLE), else niced: the
    daemon's loop and its store's writer go first, the spans wait for idle time."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "idle"
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
        return "niced"
    return "normal"


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="agentdeck telemetry worker: %(message)s")
    yield_to_the_daemon()
    run()


if __name__ == "__main__":
    main()
