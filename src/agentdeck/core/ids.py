"""Identifiers. Agent ids are short, sortable by creation time and URL-safe."""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def _b32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_agent_id(now: float | None = None) -> str:
    """``a`` + 8 chars of milliseconds + 6 random chars, e.g. ``a0kz3m1x9q4wfc2``."""
    millis = int((time.time() if now is None else now) * 1000)
    return "a" + _b32(millis, 9) + _b32(secrets.randbits(30), 6)
