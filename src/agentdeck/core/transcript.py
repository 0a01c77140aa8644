"""A compact, plain-text transcript of an agent's events, for another agent to
read (``read_transcript``) and for short summaries. Pure.

One line per event, prefixed with its id so the reader can continue after it;
a tool call is one line (``▸ Bash: pytest -q``), a long text or output is cut
with a note of how much was left out. Bookkeeping (costs, hooks, memory) is
left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentdeck.core.events import EventType, StoredEvent
from agentdeck.core.summary import deck_summary, short, tool_summary

TEXT_CHARS = 2000
OUTPUT_CHARS = 300
SKIPPED = frozenset(
    {EventType.COST_UPDATED, EventType.HOOK_RECEIVED, EventType.OBSERVATION_RECORDED}
)


def cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} … [{len(text) - limit:,} more characters]"


def line(event: StoredEvent) -> str | None:
    """The event as one readable line (or a few, for long text); None to skip it."""
    d = event.data
    kind = event.type
    head = f"#{event.id}"
    if kind in SKIPPED:
        return None
    if kind == EventType.USER_MESSAGE_SENT:
        return f"{head} user: {cut(str(d.get('text', '')), TEXT_CHARS)}"
    if kind == EventType.ASSISTANT_TEXT:
        return f"{head} assistant: {cut(str(d.get('text', '')), TEXT_CHARS)}"
    if kind == EventType.TOOL_CALLED:
        tool, tool_input = str(d.get("tool", "?")), d.get("input") or {}
        summary = deck_summary(tool, tool_input) or tool_summary(tool, tool_input)
        return f"{head} ▸ {short(summary, 240)}"
    if kind == EventType.TOOL_RETURNED:
        status = "error" if d.get("is_error") else "ok"
        output = short(str(d.get("output", "")).replace("\n", " ⏎ "), OUTPUT_CHARS)
        size = d.get("size") or len(str(d.get("output", "")))
        return f"{head}   ⎿ {status} ({size:,} bytes): {output}"
    if kind == EventType.STATE_CHANGED:
        reason = f" ({short(str(d['reason']), 160)})" if d.get("reason") else ""
        return f"{head} state: {d.get('old') or '-'} → {d.get('new')}{reason}"
    if kind == EventType.TURN_COMPLETED:
        status = "error" if d.get("is_error") else "ok"
        cost = float(d.get("cost_usd") or 0.0)
        return (
            f"{head} turn done: {status} ({d.get('terminal_reason')}), "
            f"{d.get('num_turns')} model turns, ${cost:.4f} so far"
        )
    if kind == EventType.ERROR_OCCURRED:
        return f"{head} error: {short(str(d.get('message', '')), 400)}"
    if kind == EventType.PERMISSION_REQUESTED:
        call = tool_summary(str(d.get("tool", "?")), d.get("input") or {})
        return f"{head} approval requested for {short(call, 200)} ({d.get('request_id')})"
    if kind == EventType.PERMISSION_RESOLVED:
        reason = short(str(d.get("reason") or ""), 200)
        return f"{head} permission {d.get('decision')} by {d.get('by') or 'policy'}: {reason}"
    if kind == EventType.QUESTION_ASKED:
        who = "its orchestrator" if d.get("to_agent_id") else "a person"
        question = cut(str(d.get("question", "")), TEXT_CHARS)
        return f"{head} asked {who} ({d.get('ask_id')}): {question}"
    if kind == EventType.QUESTION_ANSWERED:
        if d.get("answer") is None:
            return f"{head} question {d.get('ask_id')} expired unanswered"
        answer = cut(str(d.get("answer")), TEXT_CHARS)
        return f"{head} answer from {d.get('by')} ({d.get('ask_id')}): {answer}"
    if kind == EventType.AGENT_SPAWNED:
        return f"{head} started in {d.get('cwd')}"
    if kind == EventType.SANDBOX_BLOCKED:
        return f"{head} sandbox blocked a {d.get('what')}: {d.get('target')}"
    if kind == EventType.NOTICE:
        return f"{head} · {short(str(d.get('message', '')), 200)}"
    if kind == EventType.BUDGET_WARNING:
        return f"{head} {short(str(d.get('message', '')), 200)}"
    return None


def compact(events: Sequence[StoredEvent]) -> list[str]:
    return [text for text in (line(e) for e in events) if text is not None]
