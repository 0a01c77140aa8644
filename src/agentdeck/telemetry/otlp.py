"""Spans out over OTLP/HTTP (protobuf): the one module that imports the
OpenTelemetry SDK, and only when telemetry is on.

The spans are finished when they reach us (``telemetry.spans`` builds them from
the log, with ids of its own): each becomes a ``ReadableSpan`` handed to a batch
processor, which sends them from its own thread. The endpoint is the settings'
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``/v1/traces`` added as the OTLP spec says);
headers, timeouts and the resource (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``) are the SDK's standard ``OTEL_*`` variables.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agentdeck import __version__
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from agentdeck.telemetry.spans import SpanData

SCOPE = InstrumentationScope("agentdeck", __version__)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
SHIPPED_PROTOCOLS = ("http/protobuf",)
UNSET = Status(StatusCode.UNSET)
# Spans per export: the exporter thread encodes a batch holding the GIL, so a
# smaller one keeps the event loop's pauses short (p99 of an append, paced).
EXPORT_BATCH = 128


def traces_url(endpoint: str) -> str:
    """OTEL_EXPORTER_OTLP_ENDPOINT is the base: each signal adds its path."""
    return endpoint.rstrip("/") + "/v1/traces"


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED)


class OtlpSink:
    def __init__(self, exporter: SpanExporter, resource: Resource) -> None:
        self.resource = resource
        self.processor = BatchSpanProcessor(
            exporter, schedule_delay_millis=1000, max_export_batch_size=EXPORT_BATCH
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> OtlpSink:
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
        # Resource.create adds OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
        resource = Resource.create({SERVICE_NAME: "agentdeck"})
        return cls(OTLPSpanExporter(endpoint=traces_url(endpoint)), resource)

    def export(self, spans: list[SpanData]) -> None:
        for span in spans:
            self.processor.on_end(self._readable(span))

    def flush(self) -> None:
        """Send what is queued now (blocking)."""
        self.processor.force_flush()

    def shutdown(self) -> None:
        self.processor.shutdown()  # type: ignore[no-untyped-call]  # sends what is queued

    def _readable(self, span: SpanData) -> ReadableSpan:
        status = (
            Status(StatusCode.ERROR, span.error)
            if span.error is not None
            else Status(StatusCode.UNSET)
        )
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
