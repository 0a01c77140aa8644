"""Posting an encoded OTLP request, as the SDK's OTLP/HTTP exporter did: the
standard ``OTEL_EXPORTER_OTLP_[TRACES_]`` variables (headers, timeout,
compression, certificates), retries on 429/502/503/504 and on a failed
connection, backed off 2^n s (±20 %, or the collector's Retry-After), at most 6
tries and never past the timeout. Standard library only (``urllib``).
"""

from __future__ import annotations

import gzip
import logging
import os
import random
import ssl
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from opentelemetry.util.re import parse_env_headers

from agentdeck import __version__

logger = logging.getLogger(__name__)

RETRYABLE = frozenset({429, 502, 503, 504})
MAX_TRIES = 6
JITTER = 0.2
DEFAULT_TIMEOUT = 10.0
COMPRESSIONS = ("none", "gzip", "deflate")


def _env(name: str, environ: Mapping[str, str]) -> str:
    """The traces' own variable, else the general one."""
    return (
        environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
        or environ.get(f"OTEL_EXPORTER_OTLP_{name}")
        or ""
    ).strip()


@dataclass
class Poster:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    compression: str = "none"
    context: ssl.SSLContext | None = None

    @classmethod
    def from_env(cls, url: str, environ: Mapping[str, str] = os.environ) -> Poster:
        headers = {
            "content-type": "application/x-protobuf",
            "user-agent": f"agentdeck/{__version__}",
            **parse_env_headers(_env("HEADERS", environ), liberal=True),
        }
        try:
            timeout = float(_env("TIMEOUT", environ) or DEFAULT_TIMEOUT)
        except ValueError:
            logger.warning("OTEL_EXPORTER_OTLP_TIMEOUT is not a number: %s s", DEFAULT_TIMEOUT)
            timeout = DEFAULT_TIMEOUT
        compression = (_env("COMPRESSION", environ) or "none").lower()
        if compression not in COMPRESSIONS:
            logger.warning("unsupported OTLP compression %r: none", compression)
            compression = "none"
        if compression != "none" and "content-encoding" not in headers:
            headers["content-encoding"] = compression
        context = None
        ca, cert, key = (
            _env(n, environ) for n in ("CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY")
        )
        if url.startswith("https:") and (ca or cert):
            context = ssl.create_default_context(cafile=ca or None)
            if cert:
                context.load_cert_chain(cert, key or None)
        return cls(url, headers, timeout, compression, context)

    def _body(self, data: bytes) -> bytes:
        if self.compression == "gzip":
            return gzip.compress(data, mtime=0)
        if self.compression == "deflate":
            return zlib.compress(data)
        return data

    def post(self, data: bytes) -> bool:
        """Whether the collector took ``data`` (failures are logged, as the SDK did)."""
        body = self._body(data)
        deadline = time.monotonic() + self.timeout
        for attempt in range(MAX_TRIES):
            backoff = 2**attempt * random.uniform(1 - JITTER, 1 + JITTER)
            left = deadline - time.monotonic()
            request = urllib.request.Request(self.url, body, self.headers, method="POST")
            try:
                with urllib.request.urlopen(
                    request, timeout=max(left, 0.001), context=self.context
                ) as answer:
                    answer.read()
                return True
            except urllib.error.HTTPError as error:
                reason: object = f"{error.code} {error.reason}"
                error.close()
                if error.code not in RETRYABLE:
                    logger.error("the collector refused a batch of spans: %s", reason)
                    return False
                after = _retry_after(error.headers.get("retry-after"))
                backoff = backoff if after is None else after
            except (OSError, ValueError) as error:  # URLError, refused, reset, timed out
                reason = error
            if attempt + 1 == MAX_TRIES or backoff > deadline - time.monotonic():
                logger.error("spans' batch not sent (timeout or tries used up): %s", reason)
                return False
            logger.warning("spans' batch not sent (%s): again in %.2f s", reason, backoff)
            time.sleep(backoff)
        return False


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value or "")
    except ValueError:
        return None  # absent, or a date: our own backoff
    return max(seconds, 0.0) if seconds == seconds and seconds != float("inf") else None
