"""Trace and span ids derived from agent ids: every node agrees on them, with no
state to share.

A tree's trace id comes from its root agent's id; an agent's own span id from its
id. So a child's span names its parent's span before either is exported, the
daemon after a restart continues the same trace, and the Claude Code process of a
root agent can be handed its place in the trace (``TRACEPARENT``) at its start.
"""

from __future__ import annotations

import hashlib


def _digest(*parts: str) -> bytes:
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).digest()


def trace_id_of(root_id: str) -> int:
    """The 128-bit trace id of the tree whose root is ``root_id`` (never 0)."""
    return int.from_bytes(_digest("trace", root_id), "big") or 1


def span_id_of(*parts: str) -> int:
    """A 64-bit span id for what ``parts`` name (an agent; an agent's turn n; …)."""
    return int.from_bytes(_digest("span", *parts)[:8], "big") or 1


def traceparent(trace_id: int, span_id: int, *, is_sampled: bool = True) -> str:
    """W3C trace context (``traceparent``)."""
    return f"00-{trace_id:032x}-{span_id:016x}-{'01' if is_sampled else '00'}"


def sampled(trace_id: int, ratio: float) -> bool:
    """Whether a tree is traced, decided by its trace id as OpenTelemetry's
    ``TraceIdRatioBased`` sampler does: the same answer on every node."""
    if ratio >= 1.0:
        return True
    return (trace_id & 0xFFFF_FFFF_FFFF_FFFF) < int(ratio * 2**64)
