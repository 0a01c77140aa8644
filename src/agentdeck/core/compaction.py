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
    "AUTO_COMPACT_SKIPPED",
    "BOUNDARY",
    "COMMAND",
    "INSTRUCTIONS_MAX",
    "AutoCompactAt",
    "AutoCompaction",
    "auto_compact_reason",
    "auto_compact_skipped",
    "compact_text",
    "compaction",
    "context_window",
    "is_share",
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


# A template's ``auto_compact_at``: the context size past which an idle keep-alive
# agent is compacted between turns (``runner.auto_compact``): a whole number of
# tokens, or a share (0 < x < 1) of the turn's model's context window as Claude
# Code reports it (the result's ``modelUsage[model].contextWindow``).
AUTO_COMPACT_KEY = "auto_compact_at"
AUTO_COMPACT_MIN = 1_000
AUTO_COMPACT_MAX = 2_000_000
AUTO_COMPACT = "auto_compact"  # the Notice kind saying why it was compacted
AUTO_COMPACT_SKIPPED = "auto_compact_skipped"  # a share, and no window reported
AutoCompactAt = int | float  # tokens (int) or a share of the window (float in (0, 1))
_FORMS = (
    f"a share of the model's context window between 0 and 1 (e.g. 0.8) or a whole "
    f"number of tokens between {AUTO_COMPACT_MIN:,} and {AUTO_COMPACT_MAX:,}"
)


def parse_auto_compact_at(value: Any) -> AutoCompactAt | None:
    """A template's or spec's ``auto_compact_at`` (None: never): a share of the
    context window (a float, 0 < x < 1) or a whole number of tokens in bounds;
    ``UsageError`` saying both forms for anything else."""
    if value is None:
        return None
    if isinstance(value, float) and 0.0 < value < 1.0:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if AUTO_COMPACT_MIN <= value <= AUTO_COMPACT_MAX:
            return int(value)
        raise UsageError(f"{AUTO_COMPACT_KEY} must be {_FORMS} (got {value:,})")
    shown = repr(value) if isinstance(value, bool | float | str) else type(value).__name__
    raise UsageError(f"{AUTO_COMPACT_KEY} must be {_FORMS} (got {shown[:40]})")


def is_share(at: AutoCompactAt) -> bool:
    return isinstance(at, float)


def share_text(share: float) -> str:
    """0.8 → ``80%``; 0.125 → ``12.5%``."""
    return f"{share * 100:.4g}%"


def auto_compact_reason(context: int, at: AutoCompactAt, window: int | None = None) -> str:
    if is_share(at):
        return (
            f"context {context:,} tokens passed {share_text(float(at))} of the "
            f"{window or 0:,}-token window"
        )
    return f"context {context:,} tokens passed {AUTO_COMPACT_KEY} {int(at):,}"


def auto_compact_skipped(at: float) -> str:
    return (
        f"{AUTO_COMPACT_KEY} {share_text(at)} of the context window is not applied: "
        "the turn's result did not report its model's context window"
    )


def context_window(model_usage: Any, model: str | None) -> int | None:
    """The context window Claude Code reported for the turn's ``model`` in its
    result's ``modelUsage`` (keyed by model, or naming it as ``canonicalModel``);
    with no model known, that of the only model the turn used. None otherwise:
    never a guess."""
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    entries = [(k, v) for k, v in model_usage.items() if isinstance(v, dict)]
    found = [v for k, v in entries if model is not None and model in (k, v.get("canonicalModel"))]
    if not found and model is None and len(entries) == 1:
        found = [entries[0][1]]
    if len(found) != 1:
        return None
    window = found[0].get("contextWindow")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None
    return window


@dataclass
class AutoCompaction:
    """When an agent with ``auto_compact_at`` is compacted: after a turn whose
    context (its result's input + cache tokens) passed the threshold, once. The
    threshold is ``at`` tokens, or ``at`` (a share) of the window the turn's result
    reported; a share with no window reported is no threshold (never guessed).

    The turn a compaction ends is never a reason (its usage is the size before
    the compaction), nor is the turn that answers a ``/compact`` sent (it may
    have been declined: nothing to compact). After an automatic compaction it
    fires again only once the context was at or below the threshold (a
    compaction that left it above, or a declined one, would otherwise loop).
    """

    at: AutoCompactAt
    window: int | None = None  # the last turn's model's context window (a share's)
    armed: bool = True  # the context was at or below the threshold since the last one
    pending: bool = False  # a /compact sent, the turn answering it not yet seen
    compacted: bool = False  # a compaction's boundary seen, its turn not yet ended

    @property
    def threshold(self) -> int | None:
        """In tokens; None for a share whose window is not known."""
        if not is_share(self.at):
            return int(self.at)
        return int(self.at * self.window) if self.window else None

    def boundary(self, post_tokens: int | None) -> None:
        """A ``compact_boundary`` in the stream (whoever asked for it)."""
        self.compacted = True
        threshold = self.threshold
        if post_tokens is not None and threshold is not None and post_tokens <= threshold:
            self.armed = True

    def turn_ended(self, context: int, *, idle: bool = True, window: int | None = None) -> bool:
        """A turn ended with this context size (and, for a share, the ``window``
        its result reported for its model): True when it is to be compacted now.
        Never when the agent is not ``idle`` after it (stopping, its turn failed or
        is retried, a one-shot session): a later turn may then be the one."""
        if is_share(self.at):
            self.window = window
        if self.compacted or self.pending:
            self.compacted = self.pending = False
            return False
        threshold = self.threshold
        if threshold is None:
            return False
        if context <= threshold:
            self.armed = True
            return False
        if not self.armed or not idle:
            return False
        self.armed, self.pending = False, True
        return True
