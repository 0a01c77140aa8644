"""Telemetry off (the default) is free: the daemon imports none of the
OpenTelemetry SDK, exporter or protobuf modules (nor ``agentdeck.telemetry.otlp``),
and ``/metrics`` still answers (Prometheus' counts need no library until the first
scrape). FastAPI (0.163) imports the OpenTelemetry *API* itself, whatever we do:
that part is a no-op without a provider, and is not counted. Checked in a fresh
interpreter: this test process has the SDK loaded by other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

DAEMON = textwrap.dedent(
    """
    import asyncio, json, sys
    import httpx
    from agentdeck.serve import serve
    from agentdeck.settings import Settings

    HEAVY = (
        "opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto",
        "google.protobuf", "agentdeck.telemetry.otlp", "agentdeck.telemetry.metrics",
    )

    async def main(home):
        stop, seen = asyncio.Event(), {}

        async def ready(deck, info, token):
            seen["before"] = sorted(m for m in sys.modules if m.startswith(HEAVY))
            async with httpx.AsyncClient() as client:
                auth = {"Authorization": f"Bearer {token}"}
                answer = await client.get(info.url + "/metrics", headers=auth)
            seen["status"], seen["body"] = answer.status_code, answer.text
            seen["after"] = sorted(m for m in sys.modules if m.startswith(HEAVY))
            stop.set()

        await serve(Settings(home=home, port=0), on_ready=ready, stop=stop)
        print(json.dumps(seen))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_daemon_without_an_endpoint_imports_no_opentelemetry(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENTDECK_"))}
    done = subprocess.run(
        [sys.executable, "-c", DAEMON, str(tmp_path / "home")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] == [] and seen["after"] == []
    assert seen["status"] == 200
    names = {f.name for f in text_string_to_metric_families(seen["body"])}
    assert {"agentdeck_agents", "agentdeck_otlp_exporting", "agentdeck_events_ingested"} <= names
    assert "agentdeck_otlp_exporting 0.0" in seen["body"]
