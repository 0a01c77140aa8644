"""Webhook triggers (issue 33, item 2): a named trigger starts an agent of a template
when a signed POST reaches ``/hooks/NAME``. Pure: the record, the checks, the HMAC
verification; the prompt's rendering is ``orchestration.trigger_prompts``' (Jinja2's
sandbox), the store keeps the rows, the web layer reads the request.

* The signature is GitHub's ``X-Hub-Signature-256: sha256=<hex>``: HMAC-SHA256 of the
  raw body with the trigger's secret, compared in constant time.
* The prompt template is rendered in Jinja2's ``ImmutableSandboxedEnvironment`` with the
  payload as data only (``payload``, ``event``, ``delivery``; no globals): no
  attribute that starts with ``_``, nothing mutated, ``*`` bounded; the output capped.
* The secret never reaches the store: only its file's path and a fingerprint
  (the first 16 hex digits of SHA-256 of ``agentdeck-trigger:`` + secret).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import asdict, dataclass
from typing import Any

from agentdeck.errors import UsageError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_BODY_BYTES = 1024 * 1024  # a bigger delivery is refused (413) unread
MAX_TEMPLATE_CHARS = 4000
MAX_PROMPT_CHARS = 8000
MAX_DELIVERY_ID = 200
MAX_RATE = 600
REPLAY_WINDOW_SECONDS = 24 * 3600.0  # a delivery id is remembered this long
RATE_RE = re.compile(r"^\s*(\d{1,4})\s*/\s*min\s*$")
SIGNATURE_RE = re.compile(r"^sha256=([0-9a-fA-F]{64})$")


@dataclass(frozen=True)
class Trigger:
    name: str
    template: str  # the agent template it starts
    project: str  # where the template is found, and the agent's project
    prompt_template: str
    secret_file: str  # the 0600 file holding the secret (never the secret itself)
    secret_fingerprint: str
    rate_per_min: int
    created_at: float
    created_by: str
    scenario: str | None = None  # a scripted-model run's scenario, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trigger:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Delivery:
    trigger: str
    delivery_id: str
    event: str
    received_at: float
    status: int  # what the sender was answered
    outcome: str  # why, in a few words
    agent_id: str | None = None
    payload: str | None = None  # the scrubbed payload (JSON text), for a started agent

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HookAnswer:
    """What a webhook delivery is answered: its HTTP status and why; the agent it
    started, if any."""

    status: int
    message: str
    agent_id: str | None = None
    delivery: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.status >= 300:
            return {"error": {"status": self.status, "message": self.message}}
        return {"message": self.message, "agent": self.agent_id, "delivery": self.delivery}


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise UsageError(
            f"bad trigger name {name!r}: 1-63 of a-z, 0-9, '-' and '_', "
            "starting with a letter or digit"
        )
    return name


def parse_rate(text: str | int) -> int:
    """``N/min`` (or a bare N) as deliveries a minute: 1 to ``MAX_RATE``."""
    if isinstance(text, int):
        n = text
    else:
        m = RATE_RE.match(text) or re.match(r"^\s*(\d{1,4})\s*$", text)
        if m is None:
            raise UsageError(f"bad rate {text!r}: say N/min, e.g. 10/min")
        n = int(m.group(1))
    if not 1 <= n <= MAX_RATE:
        raise UsageError(f"bad rate {n}/min: between 1/min and {MAX_RATE}/min")
    return n


def check_delivery_id(value: str | None) -> str:
    """The sender's delivery id (``X-GitHub-Delivery``): printable, bounded; the
    replay guard keys on it, so a delivery without one is refused."""
    if (
        not value
        or len(value) > MAX_DELIVERY_ID
        or not value.isprintable()
        or value != value.strip()
    ):
        raise UsageError("a delivery needs an X-GitHub-Delivery id (1-200 printable characters)")
    return value


def fingerprint(secret: bytes) -> str:
    return hashlib.sha256(b"agentdeck-trigger:" + secret).hexdigest()[:16]


def check_secret(secret: bytes) -> bytes:
    secret = secret.strip()
    if len(secret) < 16:
        raise UsageError("a trigger's secret needs at least 16 bytes")
    return secret


def sign(secret: bytes, body: bytes) -> str:
    """The header value GitHub sends: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the body's HMAC-SHA256 with ``secret`` (constant time)."""
    if not header:
        return False
    m = SIGNATURE_RE.match(header.strip())
    if m is None:
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, m.group(1).lower())
