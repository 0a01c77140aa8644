"""Spans out over OTLP/HTTP (protobuf): the one module that imports the
OpenTelemetry SDK, and only in the span exporter's own process (``worker``).

The spans are finished when they reach us (``telemetry.trace`` builds them from
the log, with ids of its own): they are kept until a batch is full (or the worker
is idle, flushed or stopped), then each becomes a ``ReadableSpan`` and the batch is
posted by the SDK's exporter, from the worker's one thread: a slow collector slows
the worker only (the daemon's pipe to it is bounded: ``child``). The endpoint is
the settings' (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``/v1/traces`` added as the OTLP
spec says); headers, timeouts and the resource (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``) are the SDK's standard ``OTEL_*`` variables.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agentdeck import __version__
from agentdeck.settings import Settings
from agentdeck.telemetry.child import check_protocol, traces_url
from agentdeck.telemetry.resource import resource_attributes
from agentdeck.telemetry.spans import SpanData

__all__ = ["EXPORT_BATCH", "OtlpSink", "traces_url"]

SCOPE = InstrumentationScope("agentdeck", __version__)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
UNSET = Status(StatusCode.UNSET)
EXPORT_BATCH = 512  # spans per OTLP request


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED)


class OtlpSink:
    def __init__(self, exporter: SpanExporter, resource: Resource) -> None:
        self.exporter = exporter
        self.resource = resource
        self.pending: list[SpanData] = []
        self.failed = 0  # spans the collector did not take (the SDK logs each failure)

    @classmethod
    def to(cls, endpoint: str, attributes: dict[str, str] | None = None) -> OtlpSink:
        """``attributes``: the daemon's ``resource_attributes`` (the worker is
        handed them, so its spans name the daemon's instance); Resource.create adds
        OTEL_RESOURCE_ATTRIBUTES."""
        given = resource_attributes() if attributes is None else attributes
        resource = Resource.create(dict(given))
        return cls(OTLPSpanExporter(endpoint=traces_url(endpoint)), resource)

    @classmethod
    def from_settings(cls, settings: Settings) -> OtlpSink:
        return cls.to(check_protocol(settings))

    def export(self, spans: list[SpanData]) -> None:
        self.pending += spans
        if len(self.pending) >= EXPORT_BATCH:
            self.flush()

    def flush(self) -> None:
        """Send what is kept now (blocking)."""
        while self.pending:
            batch, self.pending = self.pending[:EXPORT_BATCH], self.pending[EXPORT_BATCH:]
            result = self.exporter.export([self._readable(span) for span in batch])
            if result.name != "SUCCESS":
                self.failed += len(batch)

    def shutdown(self) -> None:
        self.flush()
        self.exporter.shutdown()

    def _readable(self, span: SpanData) -> ReadableSpan:
        status = Status(StatusCode.ERROR, span.error) if span.error is not None else UNSET
        return ReadableSpan(
            name=span.name,
            context=_context(span.trace_id, span.span_id),
            parent=_context(span.trace_id, span.parent_id) if span.parent_id else None,
            resource=self.resource,
            attributes=span.attributes,
            links=[Link(_context(ln.trace_id, ln.span_id), ln.attributes) for ln in span.links]
            if span.links
            else (),
            kind=SpanKind.INTERNAL,
            status=status,
            start_time=int(span.start * 1e9),
            end_time=int(span.end * 1e9),
            instrumentation_scope=SCOPE,
        )
