"""Whether the daemon pushes its metrics over OTLP, with what, checked at start:
no OpenTelemetry import here (``telemetry.metrics`` holds the SDK's part and is
imported only when the push is on).

On while an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``) unless
``OTEL_METRICS_EXPORTER=none``; to ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` when
set, else the endpoint's ``/v1/metrics`` (the OTLP spec's rule), every
``OTEL_METRIC_EXPORT_INTERVAL`` milliseconds. Headers, timeout and compression
are the SDK's own ``OTEL_EXPORTER_OTLP[_METRICS]_*`` variables, as for the spans.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from agentdeck.errors import ConfigError
from agentdeck.settings import Settings
from agentdeck.telemetry.child import SHIPPED_PROTOCOLS  # the spans' too: one list
from agentdeck.telemetry.counts import GaugeSource, Tally

logger = logging.getLogger(__name__)

EXPORTERS = ("otlp", "none")
MIN_INTERVAL_MS = 100  # a push reads the store: not more than ten times a second
MAX_INTERVAL_MS = 86_400_000  # a day


@dataclass(frozen=True)
class PushConfig:
    url: str
    interval: float  # seconds between two pushes


def metrics_url(endpoint: str) -> str:
    """OTEL_EXPORTER_OTLP_ENDPOINT is the base: each signal adds its path."""
    return endpoint.rstrip("/") + "/v1/metrics"


def push_config(settings: Settings) -> PushConfig | None:
    """The push the settings ask for (None: off); a value it cannot honour is a
    ``ConfigError`` naming the variable and what to set instead."""
    if not settings.otel_endpoint:
        return None
    exporter = settings.otel_metrics_exporter.strip().lower()
    if exporter == "none":
        return None
    if exporter not in EXPORTERS:
        raise ConfigError(
            f"OTEL_METRICS_EXPORTER={settings.otel_metrics_exporter} is not supported: agentdeck "
            "pushes its metrics over OTLP or not at all",
            hint="set OTEL_METRICS_EXPORTER=otlp (or none); Prometheus scrapes the daemon's "
            "/metrics without it",
        )
    if settings.otel_metrics_protocol is not None:
        name, protocol = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", settings.otel_metrics_protocol
    else:
        name, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", settings.otel_protocol
    if protocol not in SHIPPED_PROTOCOLS:
        raise ConfigError(
            f"{name}={protocol} is not supported: agentdeck pushes metrics over OTLP/HTTP",
            hint=f"set {name}=http/protobuf and the collector's HTTP endpoint (usually port "
            "4318), or OTEL_METRICS_EXPORTER=none",
        )
    return PushConfig(
        url=settings.otel_metrics_endpoint or metrics_url(settings.otel_endpoint),
        interval=_interval_ms(settings.otel_metric_export_interval) / 1000,
    )


def _interval_ms(value: str) -> int:
    text = value.strip()
    if not text.isdigit() or not MIN_INTERVAL_MS <= int(text) <= MAX_INTERVAL_MS:
        raise ConfigError(
            f"OTEL_METRIC_EXPORT_INTERVAL={value[:40]!r} is not a number of milliseconds "
            f"from {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS}",
            hint="set it to whole milliseconds, e.g. 60000 (the default) for once a minute",
        )
    return int(text)


class MetricPush(Protocol):
    async def stop(self) -> None:
        """Push the figures once more and stop (a dead collector holds it a few
        seconds at most)."""
        ...


async def start(deck: GaugeSource, tally: Tally, settings: Settings) -> MetricPush | None:
    """The metrics pushed over OTLP/HTTP every interval when the settings say so
    (a ``ConfigError`` when they ask for what is not shipped), else None."""
    config = push_config(settings)
    if config is None:
        return None
    from agentdeck.telemetry.metrics import OtlpMetrics  # the SDK: only when on

    push = OtlpMetrics.to(config.url, config.interval, deck, tally)
    push.start()
    where = urlsplit(config.url)  # the host alone: a URL may hold a password
    logger.info(
        "pushing metrics over OTLP/HTTP to %s://%s every %g s",
        where.scheme, where.hostname, config.interval,
    )  # fmt: skip
    return push
