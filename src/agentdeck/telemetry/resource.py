"""The resource the daemon's spans and metrics carry, the same from both processes
(the spans are sent by a process of their own, ``telemetry.worker``).

What the user sets wins: ``OTEL_SERVICE_NAME`` or a ``service.name`` in
``OTEL_RESOURCE_ATTRIBUTES`` (else ``agentdeck``), and a ``service.instance.id``
there (else one drawn once per daemon; the SDK would draw one per process, and a
backend would see two instances). The SDK's ``Resource.create`` adds the rest of
``OTEL_RESOURCE_ATTRIBUTES``; the attributes given here override what it reads,
so only what the user left unset is given. No OpenTelemetry import.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from urllib.parse import unquote

SERVICE = "agentdeck"
_INSTANCE = str(uuid.uuid4())


def given_attributes(text: str) -> dict[str, str]:
    """``OTEL_RESOURCE_ATTRIBUTES``' pairs (``k=v,k2=v2``, percent-encoded)."""
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {unquote(k).strip(): unquote(v).strip() for k, v in pairs}


def resource_attributes(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The attributes to give ``Resource.create``: those the user left unset."""
    given = given_attributes(environ.get("OTEL_RESOURCE_ATTRIBUTES", ""))
    out: dict[str, str] = {}
    if not environ.get("OTEL_SERVICE_NAME", "").strip() and not given.get("service.name"):
        out["service.name"] = SERVICE
    if not given.get("service.instance.id"):
        out["service.instance.id"] = _INSTANCE
    return out
