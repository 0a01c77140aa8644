"""A cassette as a scenario the scripted model plays offline (``agentdeck scenario
export``). Pure: cassette records in, the scenario's YAML data out.

Each answered ``/v1/messages`` exchange (status 200) of the agent's own (it offers
the model tools; a side request such as a session title's is left out) becomes one
turn, in order: its text, thinking and tool-use blocks as the model streamed them (or
sent them whole).
Paths inside the recorded workspace become relative, so the scenario plays in any
workspace (the scripted model resolves them against the agent's). What the cassette
scrubbed stays scrubbed; a capped cassette's exchanges without a body are refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentdeck.errors import UsageError
from agentdeck.runner.recording.cassette import offers_tools, response_bytes


def scenario_of(records: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The scenario data (``mockmodel.parse_scenario``'s input) of a cassette."""
    start = next((r for r in records if r.get("kind") == "start"), {})
    cwd = str(start.get("cwd") or "")
    answered = {
        r["n"]
        for r in records
        if r.get("kind") == "response" and r.get("status") == 200 and isinstance(r.get("n"), int)
    }
    ended = {r["n"] for r in records if r.get("kind") == "end"}
    asked = [
        r
        for r in records
        if r.get("kind") == "request"
        and r["n"] in answered
        and str(r.get("path", "")).startswith("/v1/messages")
        and "count_tokens" not in str(r.get("path"))
    ]
    # The agent's own requests offer it tools; a side request (a session title) does
    # not, and as a turn it would be played as the agent's first answer.
    tooled = any(offers_tools(_json(r)) for r in asked)
    turns = []
    for request in asked:
        n = request["n"]
        if tooled and not offers_tools(_json(request)):
            continue
        if n not in ended:
            raise UsageError(
                f"exchange {n} of the recording was cut short: its end is not in the "
                "cassette (a crash while it was written, or the file was cut)",
                hint="record the run again; `agentdeck replay` still plays what it holds",
            )
        body = response_bytes(records, n)
        if not body:
            raise UsageError(
                f"exchange {n} of the recording kept no response body (the cassette was capped)",
                hint="record again with a larger AGENTDECK_RECORDING_MAX_BYTES",
            )
        blocks = _blocks(body)
        turns.append({"reply": [_reply_block(b, cwd) for b in blocks] or [{"text": ""}]})
    if not turns:
        raise UsageError("the recording has no answered model request to play")
    agent = next((r.get("agent_id") for r in records if r.get("kind") == "meta"), "?")
    return {
        "name": name,
        "description": f"Exported from the recording of agent {agent}.",
        "turns": turns,
    }


def _json(request: Mapping[str, Any]) -> Any:
    body = request.get("body")
    return body.get("json") if isinstance(body, dict) else None


def _blocks(body: bytes) -> list[dict[str, Any]]:
    """The content blocks of one response: an SSE stream, or a whole JSON message."""
    text = body.decode("utf-8", errors="replace")
    if not text.lstrip().startswith("{"):
        return _streamed(_events(text))
    message = json.loads(text)
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _events(text: str) -> Iterable[Mapping[str, Any]]:
    for frame in text.split("\n\n"):
        data = "".join(
            line[len("data:") :].strip() for line in frame.splitlines() if line.startswith("data:")
        )
        if data:
            try:
                event = json.loads(data)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def _streamed(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        index = event.get("index")
        kind = event.get("type")
        if kind == "content_block_start" and isinstance(index, int):
            blocks[index] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta" and isinstance(index, int) and index in blocks:
            delta = event.get("delta") or {}
            block = blocks[index]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
    for index, raw in partial.items():
        try:
            blocks[index]["input"] = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise UsageError(f"a recorded tool call's input is not JSON: {exc}") from None
    return [blocks[i] for i in sorted(blocks)]


def _reply_block(block: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "tool_use":
        return {
            "tool_use": {
                "name": str(block.get("name", "")),
                "input": _relative(block.get("input") or {}, cwd),
            }
        }
    if kind == "thinking":
        return {"thinking": str(block.get("thinking", ""))}
    return {"text": str(block.get("text", ""))}


def _relative(value: Any, cwd: str) -> Any:
    """Paths under the recorded workspace made relative to it (``.`` for itself)."""
    if not cwd:
        return value
    if isinstance(value, str):
        if value == cwd:
            return "."
        return value[len(cwd) + 1 :] if value.startswith(cwd + "/") else value
    if isinstance(value, Mapping):
        return {k: _relative(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v, cwd) for v in value]
    return value
