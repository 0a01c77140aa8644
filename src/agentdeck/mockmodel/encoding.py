"""Anthropic Messages API wire shapes: content blocks, SSE events, messages, errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentdeck.mockmodel.scenario import Block, TextBlock, ThinkingBlock, ToolUseBlock
from agentdeck.mockmodel.selection import resolve_paths

FALLBACK_TEXT = "OK."
STREAM_CHUNK = 5  # characters per delta when a turn streams slowly

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def new_id(prefix: str) -> str:
    return f"{prefix}_mock_{uuid.uuid4().hex[:24]}"


def estimate_tokens(size: int) -> int:
    """Rough token count for ``size`` bytes (about four per token, at least one)."""
    return max(1, size // 4)


def content_blocks(reply: Sequence[Block], cwd: str | None) -> list[dict[str, Any]]:
    """The API content of a scripted reply; relative tool paths resolved against ``cwd``."""
    out: list[dict[str, Any]] = []
    for block in reply:
        if isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            out.append({"type": "thinking", "thinking": block.thinking, "signature": new_id("sig")})
        elif isinstance(block, ToolUseBlock):
            out.append(
                {
                    "type": "tool_use",
                    "id": block.id or new_id("toolu"),
                    "name": block.name,
                    "input": resolve_paths(block.input, cwd),
                }
            )
    return out


def fallback_blocks() -> list[dict[str, Any]]:
    return [{"type": "text", "text": FALLBACK_TEXT}]


@dataclass(frozen=True)
class Reply:
    """A complete model response, ready to be sent streaming or as one JSON body."""

    message_id: str
    model: str
    content: list[dict[str, Any]]
    input_tokens: int

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"

    @property
    def output_tokens(self) -> int:
        return estimate_tokens(len(json.dumps(self.content)))

    def usage(self, output_tokens: int) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        }

    def message(self) -> dict[str, Any]:
        """The non-streaming ``Message`` object."""
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self.usage(self.output_tokens),
        }

    def message_start(self) -> dict[str, Any]:
        start = {**self.message(), "content": [], "stop_reason": None}
        start["usage"] = self.usage(1)
        return {"type": "message_start", "message": start}

    def block_events(self, chunk: int | None = None) -> Iterator[dict[str, Any]]:
        """``content_block_*`` events; ``chunk`` splits deltas into that many characters."""
        for index, block in enumerate(self.content):
            kind = block["type"]
            if kind == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                pieces, delta_type, field = _split(block["text"], chunk), "text_delta", "text"
            elif kind == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                pieces, delta_type, field = (
                    _split(block["thinking"], chunk),
                    "thinking_delta",
                    "thinking",
                )
            else:
                start = {**block, "input": {}}
                raw = json.dumps(block["input"])
                pieces, delta_type, field = _split(raw, chunk), "input_json_delta", "partial_json"
            yield {"type": "content_block_start", "index": index, "content_block": start}
            for piece in pieces:
                delta = {"type": delta_type, field: piece}
                yield {"type": "content_block_delta", "index": index, "delta": delta}
            if kind == "thinking":
                delta = {"type": "signature_delta", "signature": block["signature"]}
                yield {"type": "content_block_delta", "index": index, "delta": delta}
            yield {"type": "content_block_stop", "index": index}

    def closing_events(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": self.output_tokens},
            },
            {"type": "message_stop"},
        ]

    def events(self, chunk: int | None = None) -> list[dict[str, Any]]:
        """Every SSE event of the streamed response, in order."""
        return [self.message_start(), *self.block_events(chunk), *self.closing_events()]


def _split(text: str, chunk: int | None) -> list[str]:
    if not chunk or len(text) <= chunk:
        return [text]
    return [text[i : i + chunk] for i in range(0, len(text), chunk)]


def sse_frame(event: Mapping[str, Any]) -> bytes:
    """One server-sent event; the event name is the payload's ``type``."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


PING = sse_frame({"type": "ping"})
MALFORMED_FRAME = b"event: content_block_start\ndata: {this is not json\n\n"


def parse_sse(raw: bytes) -> list[tuple[str, Any]]:
    """Decode an SSE byte stream into ``(event, data)`` pairs (data JSON-decoded)."""
    out: list[tuple[str, Any]] = []
    for frame in raw.decode().replace("\r\n", "\n").split("\n\n"):
        event, data = "message", []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            out.append((event, json.loads("\n".join(data))))
    return out


def error_type(status: int) -> str:
    return _ERROR_TYPES.get(status, "api_error")


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error envelope, used for HTTP errors and the SSE ``error`` event."""
    return {"type": "error", "error": {"type": kind, "message": message}}
