"""The request log: every request the scripted model receives, for assertions."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

REDACTED_HEADERS = frozenset({"x-api-key", "authorization"})


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names lower-cased; credentials replaced by ``<redacted>``."""
    return {
        k.lower(): ("<redacted>" if k.lower() in REDACTED_HEADERS else v)
        for k, v in headers.items()
    }


def credential_digest(headers: Mapping[str, str]) -> str | None:
    """The SHA-256 of the request's key (``x-api-key``, else the bearer token): a
    test can tell which key came without the log holding any."""
    lowered = {k.lower(): v for k, v in headers.items()}
    key = lowered.get("x-api-key") or lowered.get("authorization", "").removeprefix("Bearer ")
    return hashlib.sha256(key.encode()).hexdigest() if key else None


@dataclass(frozen=True)
class RecordedRequest:
    """One received request.

    ``turn`` is the 0-based index into the chosen conversation's turns,
    ``"fallback"`` when no turn was eligible, ``None`` for non-message requests.
    ``conversation`` is ``None`` for the scenario's main ``turns``.
    """

    method: str
    path: str
    query: str
    scenario: str | None
    conversation: int | None
    turn: int | str | None
    request_number: int | None
    fault: str | None
    body: Any
    headers: dict[str, str]
    time: float
    credential: str | None = None  # credential_digest: which key, never the key

    @property
    def stream(self) -> bool | None:
        return self.body.get("stream") if isinstance(self.body, dict) else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RequestLog:
    """Thread-safe append-only list of :class:`RecordedRequest`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []

    def append(self, item: RecordedRequest) -> None:
        with self._lock:
            self._items.append(item)

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
