"""The TUI's words for calls, alerts and its top line. Pure.

Returns Rich markup; anything that came from an agent or a user is escaped. The
transcript's lines are ``agentdeck logs``'s own (``core.log_lines``).
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from agentdeck.core.events import StoredEvent

TOOL_SUMMARY_WIDTH = 100

# The input field that says what a call does, per tool.
_SUBJECT = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Glob": "pattern",
    "Grep": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Agent": "description",
    "Task": "description",
}


def _one_line(text: str, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tool_summary(tool: str, data: dict[str, Any]) -> str:
    """``Bash(pytest -q)``: the tool and what it was called on, on one line."""
    key = _SUBJECT.get(tool)
    subject = data.get(key) if key else None
    if subject is None and data:
        subject = next((v for v in data.values() if isinstance(v, str)), None)
    return _one_line(f"{tool}({subject})" if subject else tool, TOOL_SUMMARY_WIDTH)


def alert_text(event: StoredEvent, who: str) -> str:
    """A notice's words for an approval or a question from ``who``."""
    data = event.data
    if event.type == "permission_requested":
        return f"{who} asks to run {tool_summary(str(data.get('tool')), data.get('input') or {})}"
    return f"{who} asks: {data.get('question')}"


def status_line(
    state: str, where: str, *, agents: int, pending: int, sort: str | None,
    filter_text: str, problem: str | None,
) -> str:  # fmt: skip
    """The top line (markup): the stream's state, where the daemon is, the counts.
    Reconnecting, the line is drawn on the warning colour: no colours of its own
    there (magenta or red on orange is hard to read in any theme), bold only."""
    plain = state not in ("live", "connecting")
    mark = {"live": "[green]●[/]", "connecting": "[yellow]○[/]"}.get(state, "[b]○[/]")
    text = f"{mark} {state}  {where}  agents {agents}"
    if pending:
        text += f"  [b]pending {pending}[/]" if plain else f"  [b magenta]pending {pending}[/]"
    if sort:
        text += f"  sort: {sort}"
    if filter_text:
        text += f"  filter: {escape(filter_text)}"
    if problem:
        text += f"  — {escape(problem[:80])}"
    return text
