"""Claude Code's compaction of a session, as agentdeck asks for it and reads it. Pure.

Claude Code compacts a session when it is sent its ``/compact`` slash command as a
user message (instructions after it say what the summary should keep); its stream
then has a ``compact_boundary`` system message (``compact_metadata``: ``trigger``
``manual`` or ``auto``, ``pre_tokens``, ``post_tokens``), recorded as a Notice of
that kind (``runner.mapping``). When there is nothing to compact it says so as the
turn's result instead ("Not enough messages to compact.").
"""

from __future__ import annotations

import re
from typing import Any

from agentdeck.errors import UsageError

__all__ = ["BOUNDARY", "COMMAND", "INSTRUCTIONS_MAX", "compact_text", "compaction"]

COMMAND = "/compact"
BOUNDARY = "compact_boundary"  # the Notice kind
INSTRUCTIONS_MAX = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a newline too: one line after the command


def compact_text(instructions: str | None) -> str:
    """The message that makes Claude Code compact (``UsageError`` for instructions
    that are not one line of text)."""
    if instructions is None or not instructions.strip():
        return COMMAND
    if len(instructions) > INSTRUCTIONS_MAX:
        raise UsageError(
            f"the instructions have {len(instructions):,} characters; at most {INSTRUCTIONS_MAX:,}"
        )
    if _CONTROL.search(instructions):
        raise UsageError("the instructions must be one line of text (no control characters)")
    return f"{COMMAND} {instructions.strip()}"


def compaction(data: dict[str, Any]) -> dict[str, Any]:
    """What a ``compact_boundary`` notice's data says: trigger, tokens before and
    after (None where the stream did not say, or said something else than a count)."""
    detail = data.get("detail")
    meta = detail.get("compact_metadata") if isinstance(detail, dict) else None
    meta = meta if isinstance(meta, dict) else {}

    def count(key: str) -> int | None:
        value = meta.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    trigger = meta.get("trigger")
    return {
        "trigger": trigger if trigger in ("manual", "auto") else None,
        "pre_tokens": count("pre_tokens"),
        "post_tokens": count("post_tokens"),
    }
