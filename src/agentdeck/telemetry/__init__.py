"""Telemetry: the event log as OpenTelemetry traces and Prometheus metrics.

Everything here follows the log (``Deck.follow``), so an agent on another runner
host is traced the same as one in this process. What is pure (spans and counts
built from events: ``spans``, ``counts``, ``ids``, ``claude_env``) imports no
telemetry library; ``otlp`` imports the OpenTelemetry SDK and is imported only when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``AGENTDECK_OTEL_ENDPOINT``) is set; the
Prometheus exposition (``exposition``) imports prometheus-client at the first scrape.
"""
