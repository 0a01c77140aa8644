"""The span exporter's process (``python -m agentdeck.telemetry.worker``), started
by the daemon (``telemetry.child``) when OTLP export is on.

It reads frames from its stdin — first the settings it needs, then lists of
records (``telemetry.records``) — builds the spans and sends them over OTLP/HTTP
(``telemetry.otlp``) in batches, at least every ``SEND_SECONDS`` while spans wait.
A flush record is answered on stdout once what came before it is sent. The end
of its stdin (the daemon stopped, or died) sends what is left and ends it. It runs
niced: under load the daemon's own work goes first and the spans wait.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import time
from collections.abc import Iterator
from typing import Any

from agentdeck.telemetry.child import HEADER
from agentdeck.telemetry.records import FLUSH, Tracer

logger = logging.getLogger("agentdeck.telemetry.worker")

NICENESS = 19  # where SCHED_IDLE is not to be had
SEND_SECONDS = 1.0  # the longest a finished span waits for its batch
READ_BYTES = 1 << 20


def frames(fd: int, idle: float) -> Iterator[Any]:
    """The payloads of the frames read from ``fd``; None after ``idle`` seconds
    with nothing to read. Ends with the input."""
    buffer = bytearray()
    while True:
        while len(buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(buffer)
            if len(buffer) < HEADER.size + size:
                break
            body = bytes(buffer[HEADER.size : HEADER.size + size])
            del buffer[: HEADER.size + size]
            yield pickle.loads(body)  # our parent's own frames, over our own pipe
        ready, _, _ = select.select([fd], [], [], idle)
        if not ready:
            yield None
            continue
        chunk = os.read(fd, READ_BYTES)
        if not chunk:
            return
        buffer += chunk


def run(fd: int = 0, out: int = 1) -> None:
    from agentdeck.telemetry.otlp import OtlpSink  # the SDK: here only

    incoming = frames(fd, SEND_SECONDS)
    config = next((p for p in incoming if p is not None), None)
    if config is None:
        return
    sink = OtlpSink.to(config["endpoint"], config.get("resource"))
    tracer = Tracer(sink, config["ratio"])
    sent = time.monotonic()
    for payload in incoming:
        for record in payload or ():
            if record[0] == FLUSH:
                sink.flush()
                os.write(out, b"flushed\n")
                continue
            try:
                tracer.apply(record)
            except Exception:  # one odd record must not end the traces of all
                logger.exception("a record could not be traced: %.200r", record)
        if sink.pending and time.monotonic() - sent >= SEND_SECONDS:
            sink.flush()
        if not sink.pending:
            sent = time.monotonic()
    sink.shutdown()
    if sink.failed:
        logger.warning("%d spans were not taken by the collector", sink.failed)


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
