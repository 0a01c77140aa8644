"""What an event reads as in a terminal, for ``agentdeck logs`` and the TUI's
transcript alike. Pure.

A line is a list of runs, ``(text, style)`` with a Rich style name ("" for none),
from the event's JSON form (``StoredEvent.to_dict()``: what the daemon sends).
The CLI prints the runs (``cli.styled.Line``), the TUI draws them as Rich text;
neither has lines of its own, so both show the same events the same way. Events a
reader skips (bookkeeping, and ``agent_spawned``: its prompt is the first
``user_message_sent``) give None.
"""

from __future__ import annotations

from agentdeck.core.summary import deck_summary, short, tool_summary

# Not typing's own: the CLI's quick path renders with this module, and typing's
# import costs it ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Record = dict[str, Any]
    Spans = list[tuple[str, str]]


def log_line(event: Record) -> Spans | None:
    """One event (``StoredEvent.to_dict()``) as styled runs, or None for one not shown."""
    d = event.get("data") or {}
    kind = event["type"]
    if kind == "assistant_text":
        return [("● ", "bold"), (d.get("text", ""), "")]
    if kind == "user_message_sent":
        return [("> ", "bold cyan"), (short(d.get("text", ""), 200), "cyan")]
    if kind == "tool_called":
        tool, tool_input = d.get("tool", "?"), d.get("input", {})
        deck = deck_summary(tool, tool_input)
        if deck is not None:
            return [("⇢ ", "cyan"), (deck, "cyan")]
        return [("⚙ ", "yellow"), (tool_summary(tool, tool_input), "")]
    if kind == "question_asked":
        rid = d.get("ask_id")
        to = "its orchestrator" if d.get("to_agent_id") else "a person"
        text = (
            f"? asks {to}: {short(d.get('question', ''), 200)} — answer with "
            f"`agentdeck answer {rid} TEXT`"
        )
        return [(text, "bold yellow")]
    if kind == "question_answered":
        if d.get("answer") is None:
            return [("· its question expired unanswered", "yellow")]
        return [(f"← answer from {d.get('by')}: {short(d.get('answer', ''), 200)}", "cyan")]
    if kind == "tool_returned":
        style = "red" if d.get("is_error") else "dim"
        size = d.get("size", 0)
        extra = f" [{size} bytes, full output: {d['payload_path']}]" if d.get("truncated") else ""
        return [("  ⎿ " + short(d.get("output", ""), 160) + extra, style)]
    if kind == "state_changed":
        new = d.get("new", "")
        style = STATE_STYLE.get(new, "")
        reason = f" ({short(d['reason'], 120)})" if d.get("reason") else ""
        return [("◆ state ", "dim"), (new, style), (reason, "dim")]
    if kind == "turn_completed":
        cost = d.get("cost_usd") or 0.0
        status = "error" if d.get("is_error") else "ok"
        text = (
            f"✓ turn done: {status}, {d.get('terminal_reason')}, {d.get('num_turns')} model "
            f"turns, ${cost:.4f}, {d.get('duration_ms')} ms"
        )
        return [(text, "red" if d.get("is_error") else "green")]
    if kind == "error_occurred":
        return [(f"✗ {d.get('message')}", "bold red")]
    if kind == "permission_requested":
        rid = d.get("request_id")
        text = (
            f"? approval needed: {tool_summary(d.get('tool', '?'), d.get('input', {}))} — "
            f"answer with `agentdeck approve {rid}` or `agentdeck deny {rid}`"
        )
        return [(text, "bold yellow")]
    if kind == "permission_resolved":
        text = f"⛔ permission {d.get('decision')}: {short(d.get('reason') or '', 160)}"
        return [(text, "yellow")]
    if kind == "notice":
        return [(f"· {short(d.get('message', ''), 160)}", "dim")]
    if kind == "sandbox_blocked":
        return [(f"⛔ sandbox blocked a {d.get('what')}: {d.get('target')}", "yellow")]
    if kind == "budget_warning":
        return [(f"⚠ {short(d.get('message', ''), 160)}", "yellow")]
    return None


# Each agent state (``AgentState``'s values) and its colour.
STATE_STYLE = {
    "starting": "cyan",
    "running": "bold blue",
    "awaiting_permission": "bold yellow",
    "awaiting_input": "yellow",
    "awaiting_agents": "cyan",
    "queued": "dim",
    "idle": "green",
    "done": "bold green",
    "error": "bold red",
    "interrupted": "magenta",
    "killed": "red",
}
