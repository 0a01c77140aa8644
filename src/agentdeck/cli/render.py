"""How agents and events look in a terminal.

Built as ``styled`` lines and tables (written without Rich when that is safe;
``.rich()`` gives Rich's own objects, for a Rich console or a live display).
"""

from __future__ import annotations

import os
import time
from collections.abc import Set
from typing import TYPE_CHECKING, Any

from agentdeck.cli.styled import Line, Table
from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.summary import age, deck_summary, short, tool_summary

if TYPE_CHECKING:
    from agentdeck.core.approvals import Approval
    from agentdeck.core.asks import Ask
    from agentdeck.core.memory import MemoryHit

_STATE_VALUES = {s.value for s in AgentState}
STATE_STYLE = {
    AgentState.STARTING: "cyan",
    AgentState.RUNNING: "bold blue",
    AgentState.AWAITING_PERMISSION: "bold yellow",
    AgentState.AWAITING_INPUT: "yellow",
    AgentState.AWAITING_AGENTS: "cyan",
    AgentState.IDLE: "green",
    AgentState.DONE: "bold green",
    AgentState.ERROR: "bold red",
    AgentState.INTERRUPTED: "magenta",
    AgentState.KILLED: "red",
}


def event_line(event: StoredEvent) -> Line | None:
    d = event.data
    kind = event.type
    if kind == EventType.ASSISTANT_TEXT:
        return Line.assemble(("● ", "bold"), d.get("text", ""))
    if kind == EventType.USER_MESSAGE_SENT:
        return Line.assemble(("> ", "bold cyan"), (short(d.get("text", ""), 200), "cyan"))
    if kind == EventType.TOOL_CALLED:
        tool, tool_input = d.get("tool", "?"), d.get("input", {})
        deck = deck_summary(tool, tool_input)
        if deck is not None:
            return Line.assemble(("⇢ ", "cyan"), (deck, "cyan"))
        return Line.assemble(("⚙ ", "yellow"), tool_summary(tool, tool_input))
    if kind == EventType.QUESTION_ASKED:
        rid = d.get("ask_id")
        to = "its orchestrator" if d.get("to_agent_id") else "a person"
        return Line(
            f"? asks {to}: {short(d.get('question', ''), 200)} — answer with "
            f"`agentdeck answer {rid} TEXT`",
            style="bold yellow",
        )
    if kind == EventType.QUESTION_ANSWERED:
        if d.get("answer") is None:
            return Line("· its question expired unanswered", style="yellow")
        return Line(f"← answer from {d.get('by')}: {short(d.get('answer', ''), 200)}", style="cyan")
    if kind == EventType.TOOL_RETURNED:
        style = "red" if d.get("is_error") else "dim"
        size = d.get("size", 0)
        extra = f" [{size} bytes, full output: {d['payload_path']}]" if d.get("truncated") else ""
        return Line("  ⎿ " + short(d.get("output", ""), 160) + extra, style=style)
    if kind == EventType.STATE_CHANGED:
        new = d.get("new", "")
        style = STATE_STYLE.get(AgentState(new), "") if new in _STATE_VALUES else ""
        reason = f" ({short(d['reason'], 120)})" if d.get("reason") else ""
        return Line.assemble(("◆ state ", "dim"), (new, style), (reason, "dim"))
    if kind == EventType.TURN_COMPLETED:
        cost = d.get("cost_usd") or 0.0
        status = "error" if d.get("is_error") else "ok"
        return Line(
            f"✓ turn done: {status}, {d.get('terminal_reason')}, {d.get('num_turns')} model turns, "
            f"${cost:.4f}, {d.get('duration_ms')} ms",
            style="red" if d.get("is_error") else "green",
        )
    if kind == EventType.ERROR_OCCURRED:
        return Line(f"✗ {d.get('message')}", style="bold red")
    if kind == EventType.PERMISSION_REQUESTED:
        rid = d.get("request_id")
        return Line(
            f"? approval needed: {tool_summary(d.get('tool', '?'), d.get('input', {}))} — "
            f"answer with `agentdeck approve {rid}` or `agentdeck deny {rid}`",
            style="bold yellow",
        )
    if kind == EventType.PERMISSION_RESOLVED:
        return Line(
            f"⛔ permission {d.get('decision')}: {short(d.get('reason') or '', 160)}",
            style="yellow",
        )
    if kind == EventType.NOTICE:
        return Line(f"· {short(d.get('message', ''), 160)}", style="dim")
    if kind == EventType.SANDBOX_BLOCKED:
        return Line(f"⛔ sandbox blocked a {d.get('what')}: {d.get('target')}", style="yellow")
    if kind == EventType.BUDGET_WARNING:
        return Line(f"⚠ {short(d.get('message', ''), 160)}", style="yellow")
    return None


def ago(ts: float) -> str:
    return age(time.time() - ts)


def state_text(agent: Agent, orphans: Set[str]) -> Line:
    if agent.id in orphans:
        return Line(f"{agent.state}, supervisor gone", style="red")
    return Line(str(agent.state), style=STATE_STYLE.get(agent.state, ""))


def plain_table(*columns: str, right: Set[str] = frozenset()) -> Table:
    """A table without borders; the ``right`` columns (numbers) right-aligned."""
    return Table(columns, right=frozenset(right))


def agents_table(agents: list[Agent], orphans: Set[str] = frozenset()) -> Table:
    table = plain_table(
        "ID", "NAME", "STATE", "TOOL", "TURNS", "COST", "AGE", right={"TURNS", "COST"}
    )
    for a in agents:
        table.add_row(
            a.id,
            a.name,
            state_text(a, orphans),
            a.current_tool or "",
            str(a.turns),
            f"${a.cost_usd:.4f}",
            ago(a.created_at),
        )
    return table


def tree_table(agents: list[Agent]) -> Table:
    """Roots (agents without a parent shown here) with the agents below them,
    indented; a parent's COST is its own, TREE adds everything below it."""
    from agentdeck.core.tree import tree_rows

    ids = {a.id for a in agents}
    roots = [a for a in agents if not a.parent_id or a.parent_id not in ids]
    table = plain_table(
        "ID", "NAME", "STATE", "TOOL", "TURNS", "COST", "TREE", "AGE",
        right={"TURNS", "COST", "TREE"},
    )  # fmt: skip
    for row in tree_rows(roots, agents):
        a = row.agent
        indent = "  " * (row.depth - 1) + "└ " if row.depth else ""
        table.add_row(
            a.id,
            f"{indent}{a.name}",
            Line(str(a.state), style=STATE_STYLE.get(a.state, "")),
            a.current_tool or "",
            str(a.turns),
            f"${a.cost_usd:.4f}",
            f"${row.tree_cost:.4f}" if row.children else "",
            ago(a.created_at),
        )
    return table


def agent_panel(agent: Agent) -> Table:
    table = Table(("key", "value"), grid=True, gap=2)
    rows: list[tuple[str, Any]] = [
        ("id", agent.id),
        ("name", agent.name),
        ("state", Line(str(agent.state), style=STATE_STYLE.get(agent.state, ""))),
        ("cwd", agent.cwd),
        *([("template", agent.spec.template)] if agent.spec.template else []),
        *([("parent", agent.parent_id)] if agent.parent_id else []),
        *([("sandbox", str(agent.extra["sandbox"]))] if agent.extra.get("sandbox") else []),
        ("session", agent.session_id or "-"),
        ("turns", str(agent.turns)),
        ("cost", f"${agent.cost_usd:.4f}"),
        ("tokens", f"{agent.input_tokens} in / {agent.output_tokens} out"),
        ("tool", agent.current_tool or "-"),
        ("pid", str(agent.pid or "-")),
        ("prompt", short(agent.spec.prompt, 200)),
    ]
    if agent.last_error:
        rows.append(("error", Line(agent.last_error, style="red")))
    for key, value in rows:
        table.add_row(Line(key, style="dim"), value)
    return table


def approvals_table(items: list[Approval]) -> Table:
    table = plain_table("ID", "AGENT", "TOOL", "STATE", "WHY", "EXPIRES")
    now = time.time()
    for a in items:
        what = a.input.get("command") or a.input.get("file_path") or a.input
        left = f"{int(a.expires_at - now)}s" if a.state.is_open else "-"
        table.add_row(
            a.id,
            a.agent_id,
            f"{a.tool}({short(what, 60)})",
            str(a.state),
            short(a.reason, 60),
            left,
        )
    return table


def asks_table(items: list[Ask]) -> Table:
    table = plain_table("ID", "AGENT", "TO", "QUESTION", "STATE", "EXPIRES")
    now = time.time()
    for a in items:
        left = f"{int(a.expires_at - now)}s" if a.state.is_open else "-"
        table.add_row(
            a.id,
            a.agent_id,
            a.to_agent_id or "a person",
            short(a.text, 70),
            str(a.state) if not a.answer else f"{a.state}: {short(a.answer, 30)}",
            left,
        )
    return table


def project_label(project: str) -> str:
    """A project's short name: its directory's name (``/`` for the root)."""
    return os.path.basename(project.rstrip("/")) or project  # noqa: PTH119 - no pathlib here


def marked(snippet: str) -> Line:
    """The snippet with its matched terms in bold (and no Rich markup read)."""
    from agentdeck.core.snippets import snippet_parts

    text = Line()
    for part, matched in snippet_parts(snippet):
        text.append(part, style="bold" if matched else "")
    return text


def hits_table(hits: list[MemoryHit]) -> Table:
    table = plain_table("ID", "KIND", "AGE", "PROJECT", "TITLE", "SNIPPET")
    now = time.time()
    for h in hits:
        table.add_row(
            h.id,
            str(h.kind),
            age(now - h.ts),
            Line(project_label(h.project)),
            Line(short(h.title, 60)),
            marked(short(h.snippet, 120)),
        )
    return table
