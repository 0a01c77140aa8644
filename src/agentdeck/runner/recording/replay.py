"""Replay: a cassette's answers served, in order, to the real Claude Code; each request
it sends compared with the recorded one at that position.

The replay server listens on 127.0.0.1 under an unguessable route token, like the
recording proxy, and never forwards anything. Request ``i`` gets response ``i`` of
the cassette, its recorded bytes streamed back (the recorded workspace's path
swapped for the replay's, so the agent works in its own). What is compared is
what the agent's tools did: the tool_use and tool_result blocks of the newest
message of each request (ids, cache-control and the workspace's path left out),
scrubbed as the cassette was. A difference is a divergence: lenient mode goes on by
position, strict mode answers an error from there on (the agent stops). A request
past the last recorded one is answered an error too: the agent asked more than
was recorded.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from agentdeck.core.redact import scrub_value
from agentdeck.runner.recording.cassette import offers_tools
from agentdeck.runner.recording.proxy import PREFIX, Receive, Scope, Send, _body, _plain
from agentdeck.runner.recording.serving import LoopbackServer

MAX_DIFF_LINES = 40
BEYOND = "the agent asked more than was recorded"


@dataclass(frozen=True)
class Recorded:
    """One recorded exchange: what was asked, what was answered."""

    path: str
    body: Any  # the request's JSON as kept (scrubbed), None if it was not JSON
    status: int
    headers: dict[str, str]
    chunks: tuple[bytes, ...]


def recorded_exchanges(records: list[dict[str, Any]]) -> list[Recorded]:
    """The cassette's answered exchanges, in the order they were asked."""
    responses = {r["n"]: r for r in records if r.get("kind") == "response" and "n" in r}
    chunks: dict[int, list[bytes]] = {}
    for r in records:
        if r.get("kind") == "chunk" and isinstance(r.get("n"), int):
            if "text" in r:
                chunks.setdefault(r["n"], []).append(str(r["text"]).encode("utf-8"))
            elif "b64" in r:
                chunks.setdefault(r["n"], []).append(base64.b64decode(str(r["b64"])))
    ended = {r["n"] for r in records if r.get("kind") == "end"}
    out = []
    for r in records:
        n = r.get("n")
        if r.get("kind") != "request" or not isinstance(n, int) or n not in responses:
            continue
        if n not in ended:  # cut short (a crash, a cut file): its answer is not whole
            continue
        body = r.get("body") or {}
        out.append(
            Recorded(
                path=str(r.get("path", "")),
                body=body.get("json") if isinstance(body, dict) else None,
                status=int(responses[n].get("status") or 500),
                headers=dict(responses[n].get("headers") or {}),
                chunks=tuple(chunks.get(n, ())),
            )
        )
    return out


# -- comparing -------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def tool_blocks(body: Any, cwd: str) -> list[dict[str, Any]]:
    """The tool_use/tool_result blocks of a request's newest messages (those after
    the model's last answer), normalised."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    messages = [m for m in messages if isinstance(m, dict)]
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    newest = messages[answers[-1] + 1 :] if answers else messages
    blocks = [b for m in newest if isinstance(m.get("content"), list) for b in m["content"]]
    out: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            out.append({"tool_use": block.get("name"), "input": block.get("input")})
        elif block.get("type") == "tool_result":
            out.append(
                {"tool_result": _text(block.get("content")), "error": bool(block.get("is_error"))}
            )
    text = json.dumps(out, sort_keys=True, ensure_ascii=False)
    return json.loads(text.replace(json.dumps(cwd)[1:-1], "<workspace>")) if cwd else out


def last_tool_call(body: Any) -> tuple[str | None, str | None]:
    """The tool name and tool_use_id of a request's last tool_result."""
    messages = body.get("messages") if isinstance(body, dict) else None
    names: dict[str, str] = {}
    last: str | None = None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                last = str(block.get("tool_use_id"))
    return (names.get(last) if last else None), last


@dataclass(frozen=True)
class Divergence:
    turn: int  # the request's position, from 1
    tool: str | None
    tool_use_id: str | None
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "tool": self.tool,
            "tool_use_id": self.tool_use_id,
            "diff": self.diff,
        }


def compare(turn: int, recorded: Recorded, body: Any, rec_cwd: str, cwd: str) -> Divergence | None:
    """The divergence of request ``turn`` from the recorded one, if any."""
    want = tool_blocks(recorded.body, rec_cwd)
    got = tool_blocks(scrub_value(body), cwd)
    if want == got:
        return None
    a = json.dumps(want, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(a, b, "recorded", "replayed", lineterm="", n=1))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
    tool, tool_use_id = last_tool_call(recorded.body)
    return Divergence(turn, tool, tool_use_id, "\n".join(lines))


@dataclass
class ReplayReport:
    recorded_id: str
    agent_id: str | None = None
    state: str | None = None
    strict: bool = False
    requests: int = 0
    recorded: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    beyond: bool = False  # the agent asked more than was recorded
    stopped_at: int | None = None  # strict mode: the turn it was stopped at
    # what of the start state was not restored; what a --template changed
    notes: list[str] = field(default_factory=list)
    template: str | None = None  # replayed as this agent template would run it
    recorded_state: str | None = None  # how the recorded run ended (the cassette's)

    @property
    def ended_otherwise(self) -> bool:
        """The replay ended done where the recording ended in error, or the reverse:
        a change even when every request matched (an answer the agent could not use).
        Not said when a strict stop or a request past the cassette ended it."""
        ends = ("done", "error")
        if self.stopped_at is not None or self.beyond:
            return False
        return (
            self.state in ends and self.recorded_state in ends and self.state != self.recorded_state
        )

    @property
    def diverged(self) -> bool:
        return bool(self.divergences) or self.beyond or self.ended_otherwise

    def to_dict(self) -> dict[str, Any]:
        return {
            "recorded_id": self.recorded_id,
            "agent_id": self.agent_id,
            "state": self.state,
            "strict": self.strict,
            "template": self.template,
            "requests": self.requests,
            "recorded": self.recorded,
            "diverged": self.diverged,
            "divergences": [d.to_dict() for d in self.divergences],
            "beyond": BEYOND if self.beyond else None,
            "stopped_at": self.stopped_at,
            "recorded_state": self.recorded_state,
            "ended_otherwise": self.ended_otherwise,
            "notes": list(self.notes),
        }


# -- serving ---------------------------------------------------------------------


class ReplayApp:
    """Raw ASGI: recorded answers by position, requests compared as they come."""

    def __init__(
        self, token: str, exchanges: list[Recorded], report: ReplayReport, rec_cwd: str, cwd: str
    ) -> None:
        self.token = token
        # The agent's own requests (they offer it tools) are matched by position; a
        # side request (a session title: no tools) is answered from the recorded side
        # ones, not compared. A recording with no tools anywhere: all are its own.
        self.tooled = any(offers_tools(e.body) for e in exchanges)
        self.exchanges = [e for e in exchanges if offers_tools(e.body) or not self.tooled]
        self.side = [e for e in exchanges if self.tooled and not offers_tools(e.body)]
        self.report = report
        self.rec_cwd = rec_cwd
        self.cwd = cwd
        self.diverged = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        token, _, rest = path.removeprefix(PREFIX).partition("/")
        if not path.startswith(PREFIX) or not secrets.compare_digest(token, self.token):
            await _plain(send, 404, "no such replay route")
            return
        raw = await _body(receive)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if self.tooled and not offers_tools(body):
            if self.side:
                await self._answer(send, self.side.pop(0))
            else:
                await _plain(send, 400, "replay: no such side request was recorded")
            return
        report = self.report
        report.requests += 1
        turn = report.requests
        if report.stopped_at is not None:
            await _plain(send, 400, f"replay stopped at turn {report.stopped_at}: it diverged")
            return
        if turn > len(self.exchanges):
            report.beyond = True
            self.diverged.set()
            await _plain(send, 400, f"replay: {BEYOND} ({len(self.exchanges)} requests)")
            return
        recorded = self.exchanges[turn - 1]
        found = compare(turn, recorded, body, self.rec_cwd, self.cwd)
        if found is None and "/" + rest != recorded.path:
            found = Divergence(turn, None, None, f"-{recorded.path}\n+/{rest}")
        if found is not None:
            report.divergences.append(found)
            self.diverged.set()
            if report.strict:
                report.stopped_at = turn
                await _plain(send, 400, f"replay stopped at turn {turn}: it diverged")
                return
        await self._answer(send, recorded)

    async def _answer(self, send: Send, recorded: Recorded) -> None:
        chunks = list(recorded.chunks)
        if self.rec_cwd and self.rec_cwd != self.cwd:
            old, new = self.rec_cwd.encode(), self.cwd.encode()
            whole = b"".join(chunks)
            if whole.count(old) == sum(c.count(old) for c in chunks):
                chunks = [c.replace(old, new) for c in chunks]
            else:  # the path across a chunk boundary: one chunk
                chunks = [whole.replace(old, new)]
        headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in recorded.headers.items()
            if k != "content-length"
        ]
        await send({"type": "http.response.start", "status": recorded.status, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class ReplayServer:
    """The replay server of one replay: ``url`` is the agent's ANTHROPIC_BASE_URL."""

    def __init__(self, app: ReplayApp) -> None:
        self.app = app
        self.url = ""
        self._serving = LoopbackServer(app, "replay-server")

    async def start(self) -> str:
        port = self._serving.start()
        self.url = f"http://127.0.0.1:{port}{PREFIX}{self.app.token}"
        return self.url

    async def close(self) -> None:
        await self._serving.stop()
