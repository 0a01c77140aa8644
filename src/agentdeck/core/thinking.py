"""A template's ``thinking``: how the model thinks before it answers. Pure.

``thinking: adaptive`` (the model decides), ``thinking: disabled``, or a number of
tokens it may think for (``thinking: 8000``); as the SDK's ``thinking`` option
(``ThinkingConfig``), which Claude Code gets as ``--thinking`` or
``--max-thinking-tokens``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["parse_thinking"]

MIN_BUDGET = 1024  # the Messages API's least thinking budget
MAX_BUDGET = 128_000


def parse_thinking(value: Any, fail: Callable[[str | None, str], None]) -> dict[str, Any] | None:
    """The SDK's thinking config for a template's ``thinking``, or None (Claude
    Code's default); a bad value goes to ``fail``."""
    if value is None:
        return None
    if value in ("adaptive", "disabled"):
        return {"type": value}
    if value is False:
        return {"type": "disabled"}
    if isinstance(value, int) and not isinstance(value, bool) and MIN_BUDGET <= value <= MAX_BUDGET:
        return {"type": "enabled", "budget_tokens": value}
    fail(
        "thinking",
        f"must be adaptive, disabled or a number of tokens ({MIN_BUDGET:,} to {MAX_BUDGET:,})",
    )
    return None
