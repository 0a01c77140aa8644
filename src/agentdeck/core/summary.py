"""One-line summaries of values and tool calls, for every surface that shows them."""

from __future__ import annotations

from agentdeck import jsontext

# Not typing's own: the CLI's quick path renders with this module, and typing's
# import costs it ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def short(value: Any, limit: int = 100) -> str:
    """``value`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = value if isinstance(value, str) else jsontext.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_summary(tool: str, tool_input: dict[str, Any]) -> str:
    """``Bash(pytest -x)``, ``Edit(/src/a.py)``: the call as a person reads it."""
    for key in ("command", "file_path", "pattern", "url", "prompt", "description"):
        if key in tool_input:
            return f"{tool}({short(tool_input[key], 80)})"
    return f"{tool}({short(tool_input, 80)})"


def _names(value: Any) -> str:
    if isinstance(value, list) and value:
        return ", ".join(short(v, 40) for v in value)
    return "all its agents"


def deck_summary(tool: str, tool_input: dict[str, Any]) -> str | None:
    """A deck tool call (``mcp__deck__…``, or the same tools through another
    server name) as a person reads it: ``spawns wa (engineer): TASK-A…``; None
    for any other tool."""
    parts = tool.split("__")
    ours = len(parts) == 3 and parts[0] == "mcp" and (parts[1] == "deck" or "agentdeck" in parts[1])
    if not ours:
        return None
    name = parts[2]
    i = tool_input
    agent = short(i.get("agent", "?"), 40)
    text = short(i.get("text", ""), 120)
    lines: dict[str, Callable[[], str]] = {
        "spawn_agent": lambda: (
            f"spawns {short(i.get('name') or 'a child', 40)} "
            f"({i.get('template', 'engineer')}, {i.get('workspace', 'new')} workspace): "
            f"{short(i.get('prompt', ''), 120)}"
        ),
        "list_agents": lambda: "lists its agents",
        "read_transcript": lambda: f"reads what {agent} did (after #{i.get('since', 0)})",
        "send_to_agent": lambda: f"tells {agent}: {text}",
        "wait_for_agents": lambda: (
            f"waits for {_names(i.get('agents'))} ({i.get('mode', 'all')}, "
            f"up to {i.get('timeout_seconds', 600)}s)"
        ),
        "interrupt_agent": lambda: f"interrupts {agent}",
        "kill_agent": lambda: f"kills {agent} and the agents it started",
        "answer_request": lambda: (
            f"answers {short(i.get('request_id', '?'), 40)}: {short(i.get('answer', ''), 120)}"
        ),
        "ask_orchestrator": lambda: f"asks: {short(i.get('question', ''), 160)}",
        "notify_parent": lambda: f"notes to its orchestrator: {text}",
        "message_agent": lambda: f"messages {agent}: {text}",
    }
    make = lines.get(name)
    return make() if make is not None else None


def age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h``, ``5d``: compact, for tables, index lines and context."""
    secs = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"
