"""Translate claude-agent-sdk messages into core events. No I/O here.

``MessageMapper`` keeps the little state the translation needs (which tool is
running, the session id) and returns, for each SDK message, the events to
append plus the changes to apply to the agent row. Oversize tool output is
handed to a ``PayloadSink`` and cut in the event: scrubbed whole first (unless the
sink keeps raw payloads, then the part around the cut), so the cut never splits a
secret the scrubber would have seen whole. ``Store.record`` scrubs the events.

It imports the SDK's message classes (and so the SDK, and mcp) at module level:
only a session imports it, when it is made (``SessionState``), never the runner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from agentdeck.core.event_scrub import clean_cut, cut_utf8, scrubbed_head
from agentdeck.core.events import (
    AssistantText,
    CostUpdated,
    ErrorOccurred,
    Event,
    Notice,
    ToolCalled,
    ToolReturned,
    TurnCompleted,
)
from agentdeck.core.redact import scrub
from agentdeck.runner.mcp_servers import failed_servers


class PayloadSink(Protocol):
    raw: bool  # payloads kept unscrubbed (the setting raw_payloads)

    def store(self, agent_id: str, key: str, text: str) -> str:
        """Persist ``text`` in full; return where it went."""
        ...

    def adopt(self, agent_id: str, key: str, source: str) -> str | None:
        """Copy a file the CLI persisted (scrubbed unless ``raw``); return where it
        went, None if it is gone."""
        ...


# System subtypes worth a line in the log; the rest (status, thinking_tokens,
# session_state_changed …) are too chatty or internal.
_NOTICE_SUBTYPES = {
    "api_retry",
    "permission_denied",
    "informational",
    "notification",
    "task_started",
    "task_notification",
    "compact_boundary",
}


@dataclass(frozen=True, slots=True)
class Delta:
    """Text being written (a partial message's ``text_delta``): never an event."""

    block: str  # its message id and block index
    text: str
    parent_tool_use_id: str | None = None


@dataclass
class Mapped:
    events: list[Event] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)
    result: ResultMessage | None = None
    partial: bool = False  # a partial message (nothing to commit)
    delta: Delta | None = None  # its new text


def is_heavy(message: object, output_limit: int) -> bool:
    """Whether mapping ``message`` scrubs a large output (one too large for its event,
    or a file Claude Code persisted): worth a worker thread."""
    if not isinstance(message, UserMessage) or isinstance(message.content, str):
        return False
    if _persisted_output(message.tool_use_result) is not None:
        return True
    return any(
        isinstance(b, ToolResultBlock) and len(tool_output_text(b.content)) > output_limit
        for b in message.content
    )


def tool_output_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


class MessageMapper:
    def __init__(
        self,
        agent_id: str,
        payloads: PayloadSink,
        output_limit: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.agent_id = agent_id
        self.payloads = payloads
        self.output_limit = output_limit
        self.clock = clock
        self.session_id: str | None = None
        self._running_tools: dict[str, str] = {}
        self._process_cost = 0.0  # the CLI's running total, per process
        # The id of the message being written, by subagent (None: the agent's own).
        self._streaming: dict[str | None, str] = {}

    def heavy(self, message: object) -> bool:
        """Whether mapping ``message`` is worth a worker thread (``is_heavy``)."""
        return is_heavy(message, self.output_limit)

    def map(self, message: object) -> Mapped:
        out = Mapped()
        if isinstance(message, AssistantMessage):
            self._assistant(message, out)
        elif isinstance(message, UserMessage):
            self._user(message, out)
        elif isinstance(message, ResultMessage):
            self._result(message, out)
        elif isinstance(message, SystemMessage):
            self._system(message, out)
        elif isinstance(message, StreamEvent):
            out.partial = True
            out.delta = self._stream(message)
        return out

    def _stream(self, msg: StreamEvent) -> Delta | None:
        """The new text of a partial message (its other deltas, thinking or a tool
        call's input, are shown whole by their message)."""
        event = msg.event
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            found = message.get("id") if isinstance(message, dict) else None
            self._streaming[msg.parent_tool_use_id] = str(found or msg.uuid)
            return None
        if kind != "content_block_delta":
            return None
        delta = event.get("delta")
        if not isinstance(delta, dict) or delta.get("type") != "text_delta":
            return None
        text = delta.get("text")
        if not isinstance(text, str) or not text:
            return None
        message_id = self._streaming.get(msg.parent_tool_use_id, msg.session_id)
        block = f"{message_id}:{event.get('index', 0)}"
        return Delta(block=block, text=text, parent_tool_use_id=msg.parent_tool_use_id)

    # -- per message kind ------------------------------------------------

    def _assistant(self, msg: AssistantMessage, out: Mapped) -> None:
        ts = self.clock()
        if msg.session_id:
            self._set_session(msg.session_id, out)
        for block in msg.content:
            if isinstance(block, TextBlock) and block.text:
                out.events.append(
                    AssistantText(
                        agent_id=self.agent_id,
                        ts=ts,
                        text=block.text,
                        parent_tool_use_id=msg.parent_tool_use_id,
                    )
                )
            elif isinstance(block, ToolUseBlock):
                self._running_tools[block.id] = block.name
                out.changes["current_tool"] = block.name
                out.events.append(
                    ToolCalled(
                        agent_id=self.agent_id,
                        ts=ts,
                        tool_use_id=block.id,
                        tool=block.name,
                        input=block.input,
                        parent_tool_use_id=msg.parent_tool_use_id,
                    )
                )
        if msg.error:
            out.events.append(
                ErrorOccurred(
                    agent_id=self.agent_id,
                    ts=ts,
                    kind=f"api:{msg.error}",
                    message=" ".join(b.text for b in msg.content if isinstance(b, TextBlock))
                    or str(msg.error),
                )
            )

    def _user(self, msg: UserMessage, out: Mapped) -> None:
        if isinstance(msg.content, str):
            return  # replays of our own prompts / interruption markers
        ts = self.clock()
        for block in msg.content:
            if not isinstance(block, ToolResultBlock):
                continue
            text = tool_output_text(block.content)
            size = len(text.encode("utf-8"))
            truncated = size > self.output_limit
            path = None
            persisted = _persisted_output(msg.tool_use_result)
            if persisted is not None:
                # Claude Code kept a huge output in a file of its own and gave the
                # model a preview: keep the whole output with ours.
                path = self.payloads.adopt(self.agent_id, block.tool_use_id, persisted[0])
                if path is not None:
                    size, truncated = persisted[1], True
            if truncated and path is None:
                whole = text if self.payloads.raw else scrub(text)
                path = self.payloads.store(self.agent_id, block.tool_use_id, whole)
                # The cut never splits a secret: scrubbed whole, or here past the cut.
                text = (
                    scrubbed_head(text, self.output_limit)
                    if self.payloads.raw
                    else clean_cut(whole, self.output_limit)
                )
            elif truncated:
                text = cut_utf8(text, self.output_limit)
            self._running_tools.pop(block.tool_use_id, None)
            out.changes["current_tool"] = next(reversed(self._running_tools.values()), None)
            out.events.append(
                ToolReturned(
                    agent_id=self.agent_id,
                    ts=ts,
                    tool_use_id=block.tool_use_id,
                    output=text,
                    is_error=bool(block.is_error),
                    size=size,
                    truncated=truncated,
                    payload_path=path,
                    parent_tool_use_id=msg.parent_tool_use_id,
                )
            )

    def _system(self, msg: SystemMessage, out: Mapped) -> None:
        session = msg.data.get("session_id")
        if isinstance(session, str) and session:
            self._set_session(session, out)
        if msg.subtype == "init":  # a server that did not start is said, not swallowed
            for name, why in failed_servers(msg.data):
                out.events.append(
                    Notice(
                        agent_id=self.agent_id,
                        ts=self.clock(),
                        kind="mcp_server_failed",
                        message=f"MCP server `{name}` did not start ({why})",
                        detail={"server": name, "status": why},
                    )
                )
        if msg.subtype not in _NOTICE_SUBTYPES:
            return
        data = {k: v for k, v in msg.data.items() if k not in {"type", "subtype", "uuid"}}
        out.events.append(
            Notice(
                agent_id=self.agent_id,
                ts=self.clock(),
                kind=msg.subtype,
                message=_notice_text(msg.subtype, data),
                detail=data,
            )
        )

    def _result(self, msg: ResultMessage, out: Mapped) -> None:
        ts = self.clock()
        self._set_session(msg.session_id, out)
        self._running_tools.clear()
        out.changes["current_tool"] = None
        usage = msg.usage or {}
        in_tok = (
            int(usage.get("input_tokens") or 0)
            + int(usage.get("cache_read_input_tokens") or 0)
            + int(usage.get("cache_creation_input_tokens") or 0)
        )
        out_tok = int(usage.get("output_tokens") or 0)
        out.result = msg
        out.events.append(
            TurnCompleted(
                agent_id=self.agent_id,
                ts=ts,
                subtype=msg.subtype,
                is_error=msg.is_error,
                terminal_reason=msg.terminal_reason,
                result=msg.result,
                session_id=msg.session_id,
                num_turns=msg.num_turns,
                duration_ms=msg.duration_ms,
                cost_usd=msg.total_cost_usd,
                input_tokens=in_tok,
                output_tokens=out_tok,
                api_error_status=msg.api_error_status,
                permission_denials=list(msg.permission_denials or []),
                errors=list(msg.errors or []),
            )
        )
        # The process's running total; a result without one changes nothing.
        total = max(msg.total_cost_usd or 0.0, self._process_cost)
        delta, self._process_cost = total - self._process_cost, total
        out.events.append(
            CostUpdated(
                agent_id=self.agent_id,
                ts=ts,
                cost_usd=total,
                input_tokens=in_tok,
                output_tokens=out_tok,
                delta_usd=delta,
            )
        )

    def _set_session(self, session_id: str, out: Mapped) -> None:
        if session_id != self.session_id:
            self.session_id = session_id
            out.changes["session_id"] = session_id


def _persisted_output(result: object) -> tuple[str, int] | None:
    if not isinstance(result, dict):
        return None
    path, size = result.get("persistedOutputPath"), result.get("persistedOutputSize")
    if isinstance(path, str) and isinstance(size, int):
        return path, size
    return None


def _notice_text(subtype: str, data: dict[str, Any]) -> str:
    if subtype == "api_retry":
        return (
            f"model API retry {data.get('attempt')}/{data.get('max_retries')}: "
            f"{data.get('error')} (status {data.get('error_status')})"
        )
    if subtype == "permission_denied":
        return f"{data.get('tool_name')} denied: {data.get('message', '')}"
    for key in ("content", "text", "summary", "message"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return subtype
