"""Wire shapes: SSE framing round trip and the streamed/non-streamed message agree."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentdeck.mockmodel import TextBlock, ThinkingBlock, ToolUseBlock
from agentdeck.mockmodel.encoding import (
    Reply,
    content_blocks,
    error_body,
    error_type,
    parse_sse,
    sse_frame,
)

REPLY_BLOCKS = (
    ThinkingBlock("let me think"),
    TextBlock("Hello, streaming world! " * 3),
    ToolUseBlock("Write", {"file_path": "notes.md", "content": "héllo\n"}),
    ToolUseBlock("mcp__srv__tool", {}, id="toolu_fixed"),
)


def rebuild(events: list[tuple[str, Any]]) -> dict[str, Any]:
    """Assemble a message from stream events the way an SDK client does."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for name, data in events:
        assert name == data["type"]
        if name == "message_start":
            message = data["message"]
        elif name == "content_block_start":
            message["content"].append(dict(data["content_block"]))
        elif name == "content_block_delta":
            block, delta = message["content"][data["index"]], data["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
        elif name == "content_block_stop" and data["index"] in partial:
            message["content"][data["index"]]["input"] = json.loads(partial[data["index"]])
        elif name == "message_delta":
            message.update(data["delta"])
            message["usage"]["output_tokens"] = data["usage"]["output_tokens"]
    return message


@pytest.mark.parametrize("chunk", [None, 5, 1])
def test_sse_round_trip_rebuilds_the_message(chunk: int | None) -> None:
    reply = Reply("msg_1", "claude-x", content_blocks(REPLY_BLOCKS, "/w"), input_tokens=42)
    raw = b"".join(sse_frame(e) for e in reply.events(chunk))
    events = parse_sse(raw)
    assert events[0][0] == "message_start"
    assert [n for n, _ in events][-2:] == ["message_delta", "message_stop"]
    rebuilt = rebuild(events)
    whole = reply.message()
    assert rebuilt["content"] == whole["content"]
    assert rebuilt["stop_reason"] == whole["stop_reason"] == "tool_use"
    assert rebuilt["usage"]["input_tokens"] == 42
    assert whole["content"][2]["input"]["file_path"] == "/w/notes.md"
    assert whole["content"][3]["id"] == "toolu_fixed"
    assert whole["content"][2]["id"].startswith("toolu_")
    if chunk == 5:
        deltas = [d for n, d in events if n == "content_block_delta" and d["index"] == 1]
        assert len(deltas) > 10 and all(len(d["delta"]["text"]) <= 5 for d in deltas)


def test_text_only_reply_ends_turn() -> None:
    reply = Reply("msg_2", "m", content_blocks((TextBlock("hi"),), None), input_tokens=1)
    assert reply.message()["stop_reason"] == "end_turn"
    assert reply.output_tokens >= 1


def test_parse_sse_handles_crlf_and_multiline_data() -> None:
    raw = b'event: a\r\ndata: {"x":\r\ndata: 1}\r\n\r\n: comment\n\nevent: b\ndata: 2\n\n'
    assert parse_sse(raw) == [("a", {"x": 1}), ("b", 2)]


def test_error_shapes() -> None:
    assert error_type(429) == "rate_limit_error"
    assert error_type(529) == "overloaded_error"
    assert error_type(503) == "api_error"
    assert error_body("overloaded_error", "busy") == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "busy"},
    }
