"""How agents and events look in a terminal.

Built as ``styled`` lines and tables (written without Rich when that is safe;
``.rich()`` gives Rich's own objects, for a Rich console or a live display), from
each record's JSON form (its ``to_dict()``: what the daemon sends, what the store's
records give): the CLI's quick path prints without building the core records, whose
dataclass machinery would cost it more than the rest of its work.
"""

from __future__ import annotations

import os
import time

from agentdeck.cli.styled import Line, Table
from agentdeck.core.log_lines import STATE_STYLE, log_line
from agentdeck.core.summary import age, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Set
    from typing import Any

    Record = dict[str, Any]


def event_line(event: Record) -> Line | None:
    """One event (``StoredEvent.to_dict()``) as a line, or None for one not shown
    (the TUI's transcript draws the same runs: ``core.log_lines``)."""
    spans = log_line(event)
    return None if spans is None else Line.assemble(*spans)


def ago(ts: float) -> str:
    return age(time.time() - ts)


def state_text(agent: Record, orphans: Set[str]) -> Line:
    if agent["id"] in orphans:
        return Line(f"{agent['state']}, supervisor gone", style="red")
    return Line(agent["state"], style=STATE_STYLE.get(agent["state"], ""))


def plain_table(*columns: str, right: Set[str] = frozenset()) -> Table:
    """A table without borders; the ``right`` columns (numbers) right-aligned."""
    return Table(columns, right=frozenset(right))


def host_of(agent: Record) -> str:
    """The runner host that runs (or ran) the agent, or ``""`` (no hosts: one daemon)."""
    host = (agent.get("extra") or {}).get("host")
    return host if isinstance(host, str) else ""


def agents_table(agents: list[Record], orphans: Set[str] = frozenset()) -> Table:
    hosted = any(host_of(a) for a in agents)  # a HOST column only on a deck with hosts
    table = plain_table(
        "ID", "NAME", "STATE", *(["HOST"] if hosted else []), "TOOL", "TURNS", "COST", "AGE",
        right={"TURNS", "COST"},
    )  # fmt: skip
    for a in agents:
        table.add_row(
            a["id"],
            a["name"],
            state_text(a, orphans),
            *([host_of(a)] if hosted else []),
            a.get("current_tool") or "",
            str(a.get("turns", 0)),
            f"${a.get('cost_usd', 0.0):.4f}",
            ago(a.get("created_at", 0.0)),
        )
    return table


class _Attrs:
    """A record's dict read by attribute, for ``core.tree``'s functions."""

    def __init__(self, data: Record) -> None:
        self.data = data

    def __getattr__(self, name: str) -> Any:
        return self.data.get(name)


def tree_table(agents: list[Record]) -> Table:
    """Roots (agents without a parent shown here) with the agents below them,
    indented; a parent's COST is its own, TREE adds everything below it."""
    from agentdeck.core.tree_rows import tree_rows

    ids = {a["id"] for a in agents}
    views: list[Any] = [_Attrs(a) for a in agents]
    roots = [v for v in views if not v.parent_id or v.parent_id not in ids]
    hosted = any(host_of(a) for a in agents)
    table = plain_table(
        "ID", "NAME", "STATE", *(["HOST"] if hosted else []), "TOOL", "TURNS", "COST", "TREE",
        "AGE", right={"TURNS", "COST", "TREE"},
    )  # fmt: skip
    for row in tree_rows(roots, views):
        a = row.agent.data  # type: ignore[attr-defined]  # an _Attrs, as given
        indent = "  " * (row.depth - 1) + "└ " if row.depth else ""
        table.add_row(
            a["id"],
            f"{indent}{a['name']}",
            Line(a["state"], style=STATE_STYLE.get(a["state"], "")),
            *([host_of(a)] if hosted else []),
            a.get("current_tool") or "",
            str(a.get("turns", 0)),
            f"${a.get('cost_usd', 0.0):.4f}",
            f"${row.tree_cost:.4f}" if row.children else "",
            ago(a.get("created_at", 0.0)),
        )
    return table


def agent_panel(agent: Record) -> Table:
    a = agent
    spec = a.get("spec") or {}
    extra = a.get("extra") or {}
    table = Table(("key", "value"), grid=True, gap=2)
    rows: list[tuple[str, Any]] = [
        ("id", a["id"]),
        ("name", a["name"]),
        ("state", Line(a["state"], style=STATE_STYLE.get(a["state"], ""))),
        ("cwd", a.get("cwd", "")),
        *([("template", spec["template"])] if spec.get("template") else []),
        *([("parent", a["parent_id"])] if a.get("parent_id") else []),
        *([("sandbox", str(extra["sandbox"]))] if extra.get("sandbox") else []),
        *([("host", host_of(a))] if host_of(a) else []),
        *([("lease", str(extra["lease"]))] if host_of(a) and extra.get("lease") else []),
        ("session", a.get("session_id") or "-"),
        ("turns", str(a.get("turns", 0))),
        ("cost", f"${a.get('cost_usd', 0.0):.4f}"),
        ("tokens", f"{a.get('input_tokens', 0)} in / {a.get('output_tokens', 0)} out"),
        ("tool", a.get("current_tool") or "-"),
        ("pid", str(a.get("pid") or "-")),
        ("prompt", short(str(spec.get("prompt", "")), 200)),
    ]
    if spec.get("output_schema"):  # core.output_schema: its result, as JSON
        from agentdeck import jsontext  # here: `ls` keeps its imports lean

        result = extra.get("structured_result")
        shown = "-" if result is None else jsontext.dumps(result, ensure_ascii=False)
        rows.append(("result", short(shown, 2000)))
    skills = a.get("skills") or extra.get("skills")  # what Claude Code offered it
    if isinstance(skills, list) and skills:
        rows.append(("skills", short(", ".join(str(s) for s in skills), 500)))
    if a.get("last_error"):
        rows.append(("error", Line(a["last_error"], style="red")))
    for key, value in rows:
        table.add_row(Line(key, style="dim"), value)
    return table


def approvals_table(items: list[Record]) -> Table:
    table = plain_table("ID", "AGENT", "TOOL", "STATE", "WHY", "EXPIRES")
    now = time.time()
    for a in items:
        given = a["input"]
        what = given.get("command") or given.get("file_path") or given
        left = f"{int(a['expires_at'] - now)}s" if a["state"] == "pending" else "-"
        table.add_row(
            a["id"],
            a["agent_id"],
            f"{a['tool']}({short(what, 60)})",
            a["state"],
            short(a["reason"], 60),
            left,
        )
    return table


def asks_table(items: list[Record]) -> Table:
    table = plain_table("ID", "AGENT", "TO", "QUESTION", "STATE", "EXPIRES")
    now = time.time()
    for a in items:
        left = f"{int(a['expires_at'] - now)}s" if a["state"] == "pending" else "-"
        answer = a.get("answer")
        table.add_row(
            a["id"],
            a["agent_id"],
            a.get("to_agent_id") or "a person",
            short(a["text"], 70),
            a["state"] if not answer else f"{a['state']}: {short(answer, 30)}",
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


def hits_table(hits: list[Record]) -> Table:
    table = plain_table("ID", "KIND", "AGE", "PROJECT", "TITLE", "SNIPPET")
    now = time.time()
    for h in hits:
        table.add_row(
            h["id"],
            h["kind"],
            age(now - h["ts"]),
            Line(project_label(h["project"])),
            Line(short(h["title"], 60)),
            marked(short(h["snippet"], 120)),
        )
    return table
