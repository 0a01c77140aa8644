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
from dataclasses import dataclass
from typing import Any

from agentdeck.errors import UsageError

__all__ = [
    "AUTO_COMPACT",
    "BOUNDARY",
    "COMMAND",
    "INSTRUCTIONS_MAX",
    "AutoCompaction",
    "auto_compact_reason",
    "compact_text",
    "compaction",
    "parse_auto_compact_at",
]

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


# A template's ``auto_compact_at``: the context size (tokens) past which an idle
# keep-alive agent is compacted between turns (``runner.auto_compact``).
AUTO_COMPACT_KEY = "auto_compact_at"
AUTO_COMPACT_MIN = 1_000
AUTO_COMPACT_MAX = 2_000_000
AUTO_COMPACT = "auto_compact"  # the Notice kind saying why it was compacted


def parse_auto_compact_at(value: Any) -> int | None:
    """A template's or spec's ``auto_compact_at`` (None: never); ``UsageError`` for
    anything but a whole number of tokens in bounds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{AUTO_COMPACT_KEY} must be a whole number of tokens")
    if not AUTO_COMPACT_MIN <= value <= AUTO_COMPACT_MAX:
        raise UsageError(
            f"{AUTO_COMPACT_KEY} must be between {AUTO_COMPACT_MIN:,} and "
            f"{AUTO_COMPACT_MAX:,} tokens (got {value:,})"
        )
    return int(value)


def auto_compact_reason(context: int, threshold: int) -> str:
    return f"context {context:,} tokens passed {AUTO_COMPACT_KEY} {threshold:,}"


@dataclass
class AutoCompaction:
    """When an agent with ``auto_compact_at`` is compacted: after a turn whose
    context (its result's input + cache tokens) passed the threshold, once.

    The turn a compaction ends is never a reason (its usage is the size before
    the compaction), nor is the turn that answers a ``/compact`` sent (it may
    have been declined: nothing to compact). After an automatic compaction it
    fires again only once the context was at or below the threshold (a
    compaction that left it above, or a declined one, would otherwise loop).
    """

    threshold: int
    armed: bool = True  # the context was at or below the threshold since the last one
    pending: bool = False  # a /compact sent, the turn answering it not yet seen
    compacted: bool = False  # a compaction's boundary seen, its turn not yet ended

    def boundary(self, post_tokens: int | None) -> None:
        """A ``compact_boundary`` in the stream (whoever asked for it)."""
        self.compacted = True
        if post_tokens is not None and post_tokens <= self.threshold:
            self.armed = True

    def turn_ended(self, context: int, *, idle: bool = True) -> bool:
        """A turn ended with this context size: True when it is to be compacted now.
        Never when the agent is not ``idle`` after it (stopping, its turn failed or
        is retried, a one-shot session): a later turn may then be the one."""
        if self.compacted or self.pending:
            self.compacted = self.pending = False
            return False
        if context <= self.threshold:
            self.armed = True
            return False
        if not self.armed or not idle:
            return False
        self.armed, self.pending = False, True
        return True
