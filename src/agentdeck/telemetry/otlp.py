"""Spans out over OTLP/HTTP (protobuf), from the span exporter's own process
(``worker``) only: the one module that imports opentelemetry's SDK and proto.

The spans are finished when they reach us (``telemetry.trace`` builds them from
the log, with ids of its own): they are kept until a batch is full (or the worker
is idle, flushed or stopped), then the batch is encoded straight to an OTLP
request (``telemetry.encode``) and posted (``telemetry.post``) from the worker's
one thread: a slow collector slows the worker only (the daemon's pipe to it is
bounded: ``child``). The endpoint is the settings' (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``/v1/traces`` added as the OTLP spec says); headers, timeout, compression and
certificates are the standard ``OTEL_EXPORTER_OTLP_*`` variables, the resource
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``) the SDK's ``Resource.create``.
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource

from agentdeck import __version__
from agentdeck.settings import Settings
from agentdeck.telemetry.child import check_protocol, traces_url
from agentdeck.telemetry.encode import Encoder
from agentdeck.telemetry.post import Poster
from agentdeck.telemetry.resource import resource_attributes
from agentdeck.telemetry.spans import SpanData

__all__ = ["EXPORT_BATCH", "OtlpSink", "traces_url"]

SCOPE = ("agentdeck", __version__)
EXPORT_BATCH = 512  # spans per OTLP request


class OtlpSink:
    def __init__(self, poster: Poster, resource: Resource) -> None:
        self.poster = poster
        self.resource = resource
        self.encoder = Encoder(resource.attributes, resource.schema_url, SCOPE)
        self.pending: list[SpanData] = []
        self.failed = 0  # spans the collector did not take (each failure is logged)

    @classmethod
    def to(cls, endpoint: str, attributes: dict[str, str] | None = None) -> OtlpSink:
        """``attributes``: the daemon's ``resource_attributes`` (the worker is
        handed them, so its spans name the daemon's instance); Resource.create adds
        OTEL_RESOURCE_ATTRIBUTES."""
        given = resource_attributes() if attributes is None else attributes
        resource = Resource.create(dict(given))
        return cls(Poster.from_env(traces_url(endpoint)), resource)

    @classmethod
    def from_settings(cls, settings: Settings) -> OtlpSink:
        return cls.to(check_protocol(settings))

    def encode(self, spans: list[SpanData]) -> bytes:
        return self.encoder.request(spans)

    def export(self, spans: list[SpanData]) -> None:
        self.pending += spans
        if len(self.pending) >= EXPORT_BATCH:
            self.flush()

    def flush(self) -> None:
        """Send what is kept now (blocking)."""
        while self.pending:
            batch, self.pending = self.pending[:EXPORT_BATCH], self.pending[EXPORT_BATCH:]
            if not self.poster.post(self.encode(batch)):
                self.failed += len(batch)

    def shutdown(self) -> None:
        self.flush()
