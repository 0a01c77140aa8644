"""``agentdeck mcp``: memory as an MCP server over stdio, for Claude Code sessions.

Two tools, in the order an agent should use them: ``memory_search`` gives short
index entries (id, kind, age, title, a one-line snippet: cheap in tokens), then
``memory_get`` gives the whole records the agent picked. The server opens the
store directly (SQLite in WAL mode is safe beside a running daemon). stdout is
the protocol: logs go to stderr only.

The text functions here are pure; ``agentdeck memory show`` prints the same
text, so a person sees what an agent sees.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from agentdeck import __version__
from agentdeck.core.memory import MemoryHit, Observation, SessionSummary, render_summary
from agentdeck.core.summary import age as elapsed
from agentdeck.core.summary import short
from agentdeck.errors import NotFound
from agentdeck.memory.projects import project_of

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

    from agentdeck.core.deck import KnowledgeOps

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_GET = 20  # records per memory_get: the whole of each is long
SNIPPET_CHARS = 160

INSTRUCTIONS = (
    "Memory of earlier Claude Code sessions (agentdeck): what tools ran, what "
    "failed, what each session changed. Call memory_search first (short index "
    "entries), then memory_get with the ids worth reading in full."
)


def age(ts: float, now: float | None = None) -> str:
    """How long ago ``ts`` was, compact (``3h``)."""
    return elapsed((time.time() if now is None else now) - ts)


def index_line(hit: MemoryHit, now: float | None = None) -> str:
    """One search result on one line: ``ob3f… observation 2h ago Bash(pytest) — …``."""
    return (
        f"{hit.id} {hit.kind} {age(hit.ts, now)} ago {short(hit.title, 80)}"
        f" — {short(hit.snippet, SNIPPET_CHARS)}"
    )


def search_text(query: str, hits: list[MemoryHit], now: float | None = None) -> str:
    if not hits:
        return f"No memory matches {query!r}."
    head = f"{len(hits)} match{'es' if len(hits) != 1 else ''} for {query!r}, best first"
    lines = [head + " (memory_get with ids gives whole records):"]
    lines += [index_line(h, now) for h in hits]
    return "\n".join(lines)


def record_text(record: Observation | SessionSummary, now: float | None = None) -> str:
    """A whole record, readable: a header of facts, then its text."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.ts))
    kind = "observation" if isinstance(record, Observation) else "session summary"
    lines = [
        f"{kind} {record.id} ({age(record.ts, now)} ago, {when})",
        f"project: {record.project}",
        f"session: {record.session_id}"
        + (f"  agent: {record.agent_id}" if record.agent_id else ""),
    ]
    if isinstance(record, Observation):
        status = "error" if record.is_error else "ok"
        lines.append(f"tool call: {record.input_summary or record.tool} ({status})")
        if record.files:
            lines.append("files: " + ", ".join(record.files))
        lines += ["output:", record.output_excerpt or "(none)"]
    else:
        lines += ["", render_summary(record)]
    return "\n".join(lines).rstrip()


def get_text(records: list[Observation | SessionSummary], unknown: list[str]) -> str:
    parts = [record_text(r) for r in records]
    if unknown:
        parts.append("unknown ids (no such memory record): " + ", ".join(unknown))
    return "\n\n---\n\n".join(parts) if parts else "No ids given."


def resolve_project(value: str | None) -> str | None:
    """A project filter as stored (see ``project_of``)."""
    return project_of(value) if value else None


def new_server(name: str, instructions: str) -> FastMCP:
    """An MCP server on mcp 1's ``FastMCP`` (mcp 1, not 2, for its cheaper import:
    see pyproject.toml and benchmarks/README.md)."""
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(name, instructions=instructions, log_level="WARNING")
    server._mcp_server.version = __version__  # mcp 1 takes no version argument
    return server


def tool_error(message: str) -> Exception:
    """The exception a tool raises to answer an error result (``isError``) with ``message``."""
    from mcp.server.fastmcp.exceptions import ToolError

    return ToolError(message)


def build_server(memory: KnowledgeOps) -> FastMCP:
    """The memory tools over ``memory``: the deck's knowledge (the daemon's through
    its API when one runs, else the deck opened in this process)."""
    server = new_server("agentdeck-memory", INSTRUCTIONS)

    @server.tool(structured_output=False)  # text only: no JSON copy of it
    async def memory_search(
        query: str, project: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> str:
        """Search memory of earlier sessions (tool calls and session summaries).

        Returns short index entries, best first: id, kind, age, title and a
        one-line snippet with matched terms in [brackets]. Pass the ids worth
        reading to memory_get. ``project`` limits the search to one project
        directory (absolute, or relative to this server's working directory).
        """
        limit = max(1, min(limit, MAX_LIMIT))
        hits = await memory.memory_search(query, project=resolve_project(project), limit=limit)
        logger.info("memory_search %r: %d hits", query, len(hits))
        return search_text(query, hits)

    @server.tool(structured_output=False)  # text only: no JSON copy of it
    async def memory_get(ids: list[str]) -> str:
        """Whole memory records by id (from memory_search): a tool call's input,
        output and files, or a session's request, changes, commands, errors and
        final message. Unknown ids are listed, not an error."""
        wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
        records: list[Observation | SessionSummary] = []
        unknown: list[str] = []
        for memory_id in wanted[:MAX_GET]:
            try:
                records.append(await memory.memory_record(memory_id))
            except NotFound:
                unknown.append(memory_id)
        text = get_text(records, unknown)
        if len(wanted) > MAX_GET:
            text += f"\n\nOnly the first {MAX_GET} ids were read; ask again for the rest."
        return text

    return server
