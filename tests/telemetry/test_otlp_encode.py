"""The spans' OTLP request built straight from ``SpanData`` (``telemetry.encode``)
decodes to the very messages the SDK's path made (a ``ReadableSpan`` per span and
the SDK's encoder, kept here only as the reference): same names, ids, parents,
links, kinds, status, attributes of every type, times, resource and scope. And the
poster (``telemetry.post``) sends them as the SDK's exporter did, to a real HTTP
receiver: the ``OTEL_EXPORTER_OTLP_*`` headers and compression, retries on 503."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agentdeck import __version__
from agentdeck.telemetry.otlp import OtlpSink
from agentdeck.telemetry.post import Poster
from agentdeck.telemetry.spans import SpanData, SpanLink
from tests.support.receiver import Receiver
from tests.telemetry.test_trace import build, tree_log

SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED)


def sdk_request(spans: list[SpanData], resource: Resource) -> ExportTraceServiceRequest:
    """The path before: what the SDK's exporter posted for these spans."""
    scope = InstrumentationScope("agentdeck", __version__)
    readable = [
        ReadableSpan(
            name=s.name,
            context=_context(s.trace_id, s.span_id),
            parent=_context(s.trace_id, s.parent_id) if s.parent_id else None,
            resource=resource,
            attributes=s.attributes,
            links=[Link(_context(ln.trace_id, ln.span_id), ln.attributes) for ln in s.links],
            kind=SpanKind.INTERNAL,
            status=Status(StatusCode.ERROR, s.error) if s.error is not None else Status(),
            start_time=int(s.start * 1e9),
            end_time=int(s.end * 1e9),
            instrumentation_scope=scope,
        )
        for s in spans
    ]
    return encode_spans(readable)


def odd_spans() -> list[SpanData]:
    lists: dict[str, Any] = {"l.s": ("a", "b"), "l.i": (1, 2), "l.f": (0.5,), "l.b": (True,)}
    return [
        SpanData(
            name="linked",
            trace_id=2**128 - 1,
            span_id=2**64 - 1,
            parent_id=1,
            start=1_700_000_000.123456,
            end=1_700_000_001.5,
            attributes={
                "s": "é ✓",
                "i": -7,
                "big": 2**62,
                "f": 0.1,
                "t": True,
                "no": False,
                "z": 0.0,
            }
            | lists,
            links=(SpanLink(5, 6, {"why": "resumed", "n": 3}), SpanLink(7, 8)),
            error="it failed: ✗",
        ),
        SpanData("root", 9, 10, None, 1.0, 1.0, {"z": -0.0, "i": True}, error=""),
    ]


def sink(resource: Resource) -> OtlpSink:
    return OtlpSink(Poster("http://127.0.0.1:9/v1/traces"), resource)


@pytest.mark.parametrize("spans", [build(tree_log()), odd_spans()], ids=["tree", "odd"])
def test_the_request_is_the_one_the_sdk_made(spans: list[SpanData]) -> None:
    assert spans
    resource = Resource.create({"service.name": "agentdeck", "service.instance.id": "i-1"})
    ours = ExportTraceServiceRequest.FromString(sink(resource).encode(spans))
    before = sdk_request(spans, resource)
    assert MessageToDict(ours) == MessageToDict(before)  # a readable diff first
    assert ours == before
    assert ours.SerializeToString(deterministic=True) == before.SerializeToString(
        deterministic=True
    )


def test_the_environments_resource_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,team=a%20b")
    sent = OtlpSink.to("http://127.0.0.1:9", {"service.name": "agentdeck"})
    request = ExportTraceServiceRequest.FromString(sent.encode(odd_spans()))
    found = {kv.key: kv.value.string_value for kv in request.resource_spans[0].resource.attributes}
    assert found["deployment.environment"] == "test" and found["team"] == "a b"
    assert found["service.name"] == "agentdeck"
    assert request == sdk_request(odd_spans(), sent.resource)


def test_posted_with_the_standard_headers_gzip_and_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receiver = Receiver(statuses=(503,))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20x,other=1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=t1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    try:
        out = OtlpSink.to(f"http://127.0.0.1:{receiver.server.server_address[1]}")
        out.export(odd_spans())
        out.flush()
        assert out.failed == 0 and not out.pending
        first, second = receiver.received  # a 503, then taken
        assert first.body == second.body and second.path == "/v1/traces"
        headers = {k.lower(): v for k, v in second.headers.items()}
        assert headers["x-tenant"] == "t1" and "authorization" not in headers  # traces' own wins
        assert headers["content-encoding"] == "gzip"
        assert headers["content-type"] == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(gzip.decompress(second.body))
        assert [s.name for s in request.resource_spans[0].scope_spans[0].spans] == [
            "linked",
            "root",
        ]
    finally:
        receiver.close()


def test_a_refusal_is_counted_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    receiver = Receiver(then=400)
    try:
        out = OtlpSink(
            Poster.from_env(f"http://127.0.0.1:{receiver.server.server_address[1]}/v1/traces"),
            Resource.create({}),
        )
        out.export(odd_spans())
        out.shutdown()
        assert out.failed == 2 and len(receiver.received) == 1
        assert any("refused" in r.getMessage() for r in caplog.records)
    finally:
        receiver.close()


def test_timeout_and_compression_from_the_environment() -> None:
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "2.5", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}
    poster = Poster.from_env("http://h/v1/traces", env)
    assert poster.timeout == 2.5 and poster.compression == "none"
    assert "content-encoding" not in poster.headers
    assert Poster.from_env("http://h", {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}).timeout == 10.0
