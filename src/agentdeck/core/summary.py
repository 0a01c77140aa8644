"""One-line summaries of values and tool calls, for every surface that shows them."""

from __future__ import annotations

import json
from typing import Any


def short(value: Any, limit: int = 100) -> str:
    """``value`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_summary(tool: str, tool_input: dict[str, Any]) -> str:
    """``Bash(pytest -x)``, ``Edit(/src/a.py)``: the call as a person reads it."""
    for key in ("command", "file_path", "pattern", "url", "prompt", "description"):
        if key in tool_input:
            return f"{tool}({short(tool_input[key], 80)})"
    return f"{tool}({short(tool_input, 80)})"
