"""How the dashboard shows things: the Jinja environment, its filters and the
transcript view model. Pure: no I/O beyond loading templates."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.core.summary import deck_summary, short, tool_summary
from agentdeck.web.access import can_steer, current_principal

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

# How much of one tool output a page shows inline; the whole event is one click away.
INLINE_OUTPUT_LIMIT = 4096

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])

# Events the transcript shows; the rest (cost updates, hooks) only move the header.
TRANSCRIPT_TYPES = frozenset(
    {
        EventType.AGENT_SPAWNED,
        EventType.STATE_CHANGED,
        EventType.USER_MESSAGE_SENT,
        EventType.ASSISTANT_TEXT,
        EventType.TOOL_CALLED,
        EventType.TOOL_RETURNED,
        EventType.PERMISSION_REQUESTED,
        EventType.PERMISSION_RESOLVED,
        EventType.TURN_COMPLETED,
        EventType.ERROR_OCCURRED,
        EventType.NOTICE,
        EventType.QUESTION_ASKED,
        EventType.QUESTION_ANSWERED,
        EventType.SANDBOX_BLOCKED,
    }
)
# Events that change what the board shows for an agent.
BOARD_TYPES = frozenset(
    {
        EventType.AGENT_SPAWNED,
        EventType.STATE_CHANGED,
        EventType.TOOL_CALLED,
        EventType.TOOL_RETURNED,
        EventType.COST_UPDATED,
        EventType.TURN_COMPLETED,
        EventType.ERROR_OCCURRED,
    }
)
# The activity feed leaves out the chattiest bookkeeping.
ACTIVITY_SKIP = frozenset({EventType.COST_UPDATED})


def markdown(text: str) -> Markup:
    """Assistant text as HTML; raw HTML in it is escaped, unsafe links dropped."""
    return Markup(_md.render(text or ""))  # markdown-it escapes raw HTML (html=False)


def duration(seconds: float) -> str:
    secs = max(0, int(seconds))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m {secs % 60:02d}s"
    return f"{secs // 3600}h {secs % 3600 // 60:02d}m"


def elapsed(agent: Agent, now: float | None = None) -> float:
    """Since it was created: until now while it has not ended (queued for a host
    too: its wait counts), else until its last change."""
    end = agent.updated_at if agent.state.is_final else (now or time.time())
    return max(0.0, end - agent.created_at)


def clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def money(value: float | None) -> str:
    return f"${value or 0.0:.4f}"


def count(value: int | None) -> str:
    return f"{value or 0:,}"


def nbytes(value: int | None) -> str:
    size = float(value or 0)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop returns


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def event_summary(event: StoredEvent) -> str:
    """One line for the activity feed."""
    d = event.data
    kind = event.type
    if kind == EventType.ASSISTANT_TEXT:
        return short(d.get("text", ""), 140)
    if kind == EventType.USER_MESSAGE_SENT:
        return "you: " + short(d.get("text", ""), 140)
    if kind == EventType.TOOL_CALLED:
        tool, tool_input = str(d.get("tool", "?")), d.get("input") or {}
        return deck_summary(tool, tool_input) or tool_summary(tool, tool_input)
    if kind == EventType.QUESTION_ASKED:
        to = "its orchestrator" if d.get("to_agent_id") else "a person"
        return f"asks {to}: {short(d.get('question', ''), 120)}"
    if kind == EventType.QUESTION_ANSWERED:
        if d.get("answer") is None:
            return "its question expired unanswered"
        return f"answered by {d.get('by')}: {short(d.get('answer', ''), 120)}"
    if kind == EventType.TOOL_RETURNED:
        status = "error" if d.get("is_error") else "ok"
        return f"tool result ({status}, {nbytes(d.get('size'))}): {short(d.get('output', ''), 90)}"
    if kind == EventType.STATE_CHANGED:
        reason = f" — {short(d['reason'], 80)}" if d.get("reason") else ""
        return f"{d.get('old') or '∅'} → {d.get('new')}{reason}"
    if kind == EventType.TURN_COMPLETED:
        status = "error" if d.get("is_error") else "ok"
        return f"turn done ({status}, {d.get('terminal_reason')}), {money(d.get('cost_usd'))}"
    if kind == EventType.ERROR_OCCURRED:
        return short(d.get("message", ""), 140)
    if kind == EventType.AGENT_SPAWNED:
        return f"spawned {d.get('name')}: {short((d.get('spec') or {}).get('prompt', ''), 100)}"
    if kind == EventType.PERMISSION_REQUESTED:
        return f"asks to use {tool_summary(str(d.get('tool', '?')), d.get('input') or {})}"
    if kind == EventType.PERMISSION_RESOLVED:
        return f"permission {d.get('decision')}: {short(d.get('reason') or '', 100)}"
    if kind == EventType.NOTICE:
        return short(d.get("message", ""), 140)
    if kind == EventType.SANDBOX_BLOCKED:
        return f"sandbox blocked a {d.get('what')}: {short(d.get('target', ''), 120)}"
    if kind == EventType.OBSERVATION_RECORDED:
        return f"remembered ({d.get('kind')}): {short(d.get('title', ''), 120)}"
    if kind == EventType.BUDGET_WARNING:
        return short(d.get("message", ""), 140)
    return kind


def tool_label(tool: str | None) -> str:
    """A tool's name as a board shows it: the deck's own tools by their short name."""
    if not tool:
        return ""
    return "deck: " + tool.removeprefix("mcp__deck__") if tool.startswith("mcp__deck__") else tool


def first_line(text: str | None) -> str:
    return short((text or "").strip().split("\n", 1)[0], 160)


def parse_states(state: str) -> list[AgentState] | None:
    """``""`` → all; ``live`` / ``finished`` → groups; else one state name.
    ``live`` is every agent not ended: one queued for a runner host too (it has
    no process yet, but it is on its way, and can be killed)."""
    if not state:
        return None
    if state == "live":
        return [s for s in AgentState if not s.is_final]
    if state == "finished":
        return [s for s in AgentState if s.is_final]
    try:
        return [AgentState(state)]
    except ValueError:
        return []


def state_class(state: str | AgentState) -> str:
    return "state-" + str(state).replace("_", "-")


@dataclass
class Item:
    """One transcript entry: an event, and for a tool call the result paired with it."""

    event: StoredEvent
    result: StoredEvent | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def transcript_items(events: Sequence[StoredEvent]) -> list[Item]:
    """Events in order; each tool result folded into its call when both are here."""
    calls: dict[str, Item] = {}
    items: list[Item] = []
    for event in events:
        if event.type not in TRANSCRIPT_TYPES:
            continue
        if event.type == EventType.TOOL_RETURNED:
            call = calls.get(str(event.data.get("tool_use_id")))
            if call is not None and call.result is None:
                call.result = event
                continue
        item = Item(event)
        if event.type == EventType.TOOL_CALLED:
            calls[str(event.data.get("tool_use_id"))] = item
        items.append(item)
    return items


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        markdown=markdown,
        duration=duration,
        clock=clock,
        money=money,
        count=count,
        nbytes=nbytes,
        pretty_json=pretty_json,
        short=short,
        state_class=state_class,
        tool_label=tool_label,
        first_line=first_line,
        summary=event_summary,
    )
    env.globals.update(
        elapsed=elapsed,
        tool_summary=tool_summary,
        deck_summary=deck_summary,
        INLINE_OUTPUT_LIMIT=INLINE_OUTPUT_LIMIT,
        E=EventType,
        whoami=current_principal,
        can_steer=can_steer,
    )
    return env


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
