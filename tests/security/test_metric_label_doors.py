"""The metrics' door: a tool's name is the model's text (a tool_use block's name,
not scrubbed in the log: it is structural), and it becomes a label of
``agentdeck_tool_calls_total`` and of the metrics pushed over OTLP to a collector.
A name that carries a secret, a line break or kilobytes of text counts as
``other``; the names of real tools are kept."""

from __future__ import annotations

import hashlib

from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.templates import BUILTIN_TOOLS
from agentdeck.telemetry.counts import Tally

TOKEN = "ghp_" + hashlib.sha256(b"planted").hexdigest()[:36]
KEY = "sk-ant-api03-" + hashlib.sha256(b"key").hexdigest()[:40]
HOSTILE = [
    TOKEN,
    f"mcp__x__{TOKEN}",  # a scrub of the whole name does not see it
    f"mcp__exfil__{KEY}",
    "mcp__x__AKIAIOSFODNN7EXAMPLE",
    "Bash\nagentdeck_cost_usd_total 0",
    "x" * 10_000,
    "Bash\u202e",
    "",
]
REAL = ["Bash", "mcp__deck__spawn_agent", "mcp__claude-in-chrome__tabs_context"]


def _called(n: int, tool: str) -> StoredEvent:
    data = {"tool_use_id": f"t{n}", "tool": tool, "input": {}}
    return StoredEvent(n, "a", EventType.TOOL_CALLED, 1.0, data)


def test_a_tool_name_the_model_wrote_carries_no_secret_or_text_into_a_label() -> None:
    tally = Tally()
    for n, tool in enumerate([*HOSTILE, *REAL, *HOSTILE, *REAL], start=1):
        tally.feed(_called(n, tool))
    assert tally.tool_calls == {"other": 2 * len(HOSTILE), **dict.fromkeys(REAL, 2)}
    assert all(tally.feed(_called(0, t)) is None for t in BUILTIN_TOOLS)
    assert set(BUILTIN_TOOLS) <= set(tally.tool_calls)  # Claude Code's own: by name
