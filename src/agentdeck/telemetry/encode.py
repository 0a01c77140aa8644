"""Spans as an OTLP request: ``SpanData`` straight to the bytes of an
``ExportTraceServiceRequest``, with opentelemetry-proto's messages (a public,
versioned API).

The SDK's way — a ``ReadableSpan`` per span, then its encoder making a message of
every attribute — cost about 60 % of the exporter process's CPU (44 µs a span).
Here each span's own fields are one ``Span`` message, serialized; its attributes
are ``KeyValue`` messages serialized once and kept (most repeat: an agent's id,
its model, an operation's name); and the request is put together by protobuf's
rule that a message may be written in parts, a length-delimited field at a time
(a parser merges them: a repeated field's parts append). 5 µs a span.
``tests/telemetry/test_otlp_encode.py`` holds the result to the SDK's, decoded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, SpanFlags, Status

from agentdeck.telemetry.spans import SpanData

__all__ = ["Encoder"]

logger = logging.getLogger(__name__)

INTERNAL = Span.SpanKind.SPAN_KIND_INTERNAL
LOCAL = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK  # known, and not remote
ERROR = Status.StatusCode.STATUS_CODE_ERROR
UNSET = Status()
# Field numbers (opentelemetry/proto/.../trace.proto, collector's trace_service.proto)
REQUEST_RESOURCE_SPANS = 1
RESOURCE_SPANS_RESOURCE, RESOURCE_SPANS_SCOPE_SPANS, RESOURCE_SPANS_SCHEMA_URL = 1, 2, 3
SCOPE_SPANS_SCOPE, SCOPE_SPANS_SPANS = 1, 2
SPAN_ATTRIBUTES, SPAN_LINKS = 9, 13
KEPT = 4096  # attributes kept encoded (then forgotten all at once)
SCALARS = frozenset({str, bool, int})  # kept: not floats (-0.0 == 0.0)
KEPT_TEXT = 64  # characters of the longest text value kept (a tool's input is not)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, data: bytes) -> bytes:
    """A length-delimited field: a message, bytes or text."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def any_value(value: object) -> AnyValue:
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bool):  # before int: a bool is an int
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, Sequence):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    if isinstance(value, Mapping):
        return AnyValue(kvlist_value=KeyValueList(values=key_values(value)))
    raise TypeError(f"an attribute cannot hold a {type(value).__name__}")


def key_values(attributes: Mapping[str, object]) -> list[KeyValue]:
    out = []
    for key, value in attributes.items():
        try:
            out.append(KeyValue(key=key, value=any_value(value)))
        except (TypeError, ValueError):  # as the SDK: the attribute is left out, said
            logger.exception("attribute %.100r not sent", key)
    return out


class Encoder:
    """Batches of spans to requests, for one resource and scope."""

    def __init__(
        self, resource: Mapping[str, object], schema_url: str, scope: tuple[str, str]
    ) -> None:
        head = field(
            RESOURCE_SPANS_RESOURCE,
            Resource(attributes=key_values(resource)).SerializeToString(),
        )
        self._resource = head + (
            field(RESOURCE_SPANS_SCHEMA_URL, schema_url.encode()) if schema_url else b""
        )
        name, version = scope
        self._scope = field(
            SCOPE_SPANS_SCOPE, InstrumentationScope(name=name, version=version).SerializeToString()
        )
        self._kept: dict[tuple[str, type, object], bytes] = {}

    def request(self, spans: Sequence[SpanData]) -> bytes:
        """The bytes of an ``ExportTraceServiceRequest`` holding ``spans``."""
        scope_spans = self._scope + b"".join(
            [field(SCOPE_SPANS_SPANS, self._span(span)) for span in spans]
        )
        group = self._resource + field(RESOURCE_SPANS_SCOPE_SPANS, scope_spans)
        return field(REQUEST_RESOURCE_SPANS, group)

    def _span(self, span: SpanData) -> bytes:
        own: bytes = Span(
            trace_id=span.trace_id.to_bytes(16, "big"),
            span_id=span.span_id.to_bytes(8, "big"),
            parent_span_id=span.parent_id.to_bytes(8, "big") if span.parent_id else b"",
            name=span.name,
            kind=INTERNAL,
            start_time_unix_nano=int(span.start * 1e9),
            end_time_unix_nano=int(span.end * 1e9),
            status=Status(code=ERROR, message=span.error) if span.error is not None else UNSET,
            flags=LOCAL,
        ).SerializeToString()
        return own + self._attributes(span.attributes) + self._links(span)

    def _attributes(self, attributes: Mapping[str, object]) -> bytes:
        kept = self._kept
        parts = []
        for key, value in attributes.items():
            kind = type(value)
            scalar = kind in SCALARS  # not a list: (1,) == (True,), and may not hash
            data = kept.get((key, kind, value)) if scalar else None
            if data is None:
                data = b"".join(
                    field(SPAN_ATTRIBUTES, kv.SerializeToString())
                    for kv in key_values({key: value})
                )
                if scalar and (kind is not str or len(value) <= KEPT_TEXT):  # type: ignore[arg-type]
                    if len(kept) >= KEPT:
                        kept.clear()
                    kept[key, kind, value] = data
            parts.append(data)
        return b"".join(parts)

    def _links(self, span: SpanData) -> bytes:
        if not span.links:
            return b""
        return b"".join(
            field(
                SPAN_LINKS,
                Span.Link(
                    trace_id=link.trace_id.to_bytes(16, "big"),
                    span_id=link.span_id.to_bytes(8, "big"),
                    attributes=key_values(link.attributes),
                    flags=LOCAL,
                ).SerializeToString(),
            )
            for link in span.links
        )
