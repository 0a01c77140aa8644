"""The span exporter's own process, as the daemon sees it.

Building spans, making the SDK's objects of them, encoding them to protobuf and
posting them cost about as much CPU as ingesting the events: done on the daemon's
loop (and under its GIL) they slowed every append, and so did handing the events
over. So the daemon only tells a child process (``python -m
agentdeck.telemetry.worker``, ``SCHED_IDLE``) how far the log is settled and the
few facts it looked up (``telemetry.records``), a frame per batch of the log (a
length and a pickle); the child reads the events from the database itself, on the
other core, and does the rest.

Nothing here waits on the child: a frame is written to the pipe's buffer, and
when the child is that far behind (``MAX_BUFFERED``: a slow or dead collector) or
gone, frames are dropped, counted and said once. A child that ended on its own
(killed, out of memory, a bug) is started again, after ``RESTART_SECONDS``
doubling up to ``MAX_RESTART_SECONDS`` while it keeps ending young; each start is
a new ``generation``, and the follower then meets its agents again (their spans
go on in their trees' traces, linked to what the old child had open, which is
lost). ``stop`` ends what is open, closes the pipe and waits (bounded) for the
child to send what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import struct
import sys
import time
from typing import Any

from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from agentdeck.telemetry.records import CLOSE, FLUSH, Record
from agentdeck.telemetry.resource import resource_attributes

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">I")  # a frame's length, then its pickle
MAX_BUFFERED = 16 * 2**20  # bytes written and not yet taken by the child
STOP_SECONDS = 30.0  # for the child to send what is left (the SDK's timeout is 10 s)
FLUSH_SECONDS = 60.0
SHIPPED_PROTOCOLS = ("http/protobuf",)
RESTART_SECONDS = 1.0  # before the first restart; doubled while the child dies young
MAX_RESTART_SECONDS = 60.0  # a child that lived this long is restarted at once again


def traces_url(endpoint: str) -> str:
    """OTEL_EXPORTER_OTLP_ENDPOINT is the base: each signal adds its path."""
    return endpoint.rstrip("/") + "/v1/traces"


def check_protocol(settings: Settings) -> str:
    """The endpoint spans go to; ``ConfigError`` when off or not OTLP/HTTP."""
    endpoint = settings.otel_endpoint
    if not endpoint:
        raise ConfigError("telemetry is off: no OTLP endpoint is set")
    protocol = settings.otel_protocol
    if protocol not in SHIPPED_PROTOCOLS:
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported: agentdeck "
            "exports over OTLP/HTTP",
            hint="set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's "
            "HTTP endpoint (usually port 4318)",
        )
    return endpoint


def frame(payload: Any) -> bytes:
    body = pickle.dumps(payload, protocol=5)
    return HEADER.pack(len(body)) + body


class ExportChild:
    """The daemon's end of the pipe to the span exporter's process."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        limit: int = MAX_BUFFERED,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.process = process
        self.limit = limit  # bytes the child may be behind before records are dropped
        self.config = config  # what each new child is told first (None: not restarted)
        self.stop_seconds = STOP_SECONDS
        self.restart_seconds = RESTART_SECONDS
        self.pending: list[Record] = []
        self.dropped = 0  # records dropped (the child gone or too far behind)
        self.generation = 0  # children started again after one ended
        self._said = False
        self._flushing = asyncio.Lock()
        self._started = time.monotonic()
        self._young = 0  # children in a row that ended before MAX_RESTART_SECONDS
        self._restarting: asyncio.Task[None] | None = None
        self._stopped = False

    @classmethod
    async def start(cls, settings: Settings, *, limit: int = MAX_BUFFERED) -> ExportChild:
        endpoint = check_protocol(settings)
        config = {
            "endpoint": endpoint,
            "ratio": settings.otel_sample_ratio,
            "resource": resource_attributes(),  # the daemon's instance, not the worker's
            "database": str(settings.database),  # the log, which it reads itself
        }
        child = cls(await _spawn(), limit, config)
        child._write(config, 0)
        return child

    def put(self, record: Record) -> None:
        self.pending.append(record)

    def send(self) -> bool:
        """The records kept so far, to the child now (never waits); False: dropped."""
        if not self.pending:
            return True
        records, self.pending = self.pending, []
        return self._write(records, len(records))

    async def flush(self) -> None:
        """Wait until the child has sent every span of the records sent before."""
        async with self._flushing:
            self.send()
            stdout = self.process.stdout
            if stdout is None or not self._write([(FLUSH,)], 0):
                return
            async with asyncio.timeout(FLUSH_SECONDS):
                await stdout.readline()

    async def stop(self, now: float) -> None:
        """What is open ends now; the child sends what is left and exits (bounded)."""
        self._stopped = True
        if self._restarting is not None:
            self._restarting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._restarting
        self.put((CLOSE, now))
        self.send()
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            async with asyncio.timeout(self.stop_seconds):
                await self.process.wait()
        except TimeoutError:
            logger.error("the span exporter did not finish in %ss; stopped", self.stop_seconds)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        if self.dropped:
            logger.warning("telemetry: %d records of spans were dropped in all", self.dropped)

    def _write(self, payload: Any, records: int) -> bool:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing() or self.process.returncode is not None:
            self._drop(records, f"the span exporter process ended ({self.process.returncode})")
            self._restart()
        elif stdin.transport.get_write_buffer_size() > self.limit:
            self._drop(records, "the span exporter is behind (is the collector slow or down?)")
        else:
            stdin.write(frame(payload))
            return True
        return False

    def _restart(self) -> None:
        """A child that ended on its own is started again (see the module), once."""
        if self._stopped or self.config is None or self.process.returncode is None:
            return
        if self._restarting is None or self._restarting.done():
            self._restarting = asyncio.get_running_loop().create_task(
                self._start_again(), name="span exporter restart"
            )

    async def _start_again(self) -> None:
        if time.monotonic() - self._started >= MAX_RESTART_SECONDS:
            self._young = 0
        wait = self.restart_seconds * 2 ** min(self._young, 8)
        await asyncio.sleep(min(wait, MAX_RESTART_SECONDS))
        self._young += 1
        try:
            process = await _spawn()
        except OSError as exc:
            logger.error("telemetry: the span exporter could not be started again: %s", exc)
            return  # the next records try again
        ended = self.process.returncode
        self.process, self._started, self._said = process, time.monotonic(), False
        self.generation += 1
        self._write(self.config, 0)
        logger.warning(
            "telemetry: the span exporter process ended (%s); started again (%d so far)",
            ended,
            self.generation,
        )

    def _drop(self, records: int, why: str) -> None:
        self.dropped += records
        if not self._said:  # said once; the total at stop
            self._said = True
            logger.warning("telemetry: %s: spans are dropped", why)


async def _spawn() -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentdeck.telemetry.worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
