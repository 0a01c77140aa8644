"""Hand-built Messages API request bodies shaped like the CLI's."""

from __future__ import annotations

from typing import Any

REMINDER = "<system-reminder>\nAttribution for git commits: fix nothing\n</system-reminder>\n"


def user(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": text}],
    }


def env_block(cwd: str) -> dict[str, Any]:
    text = f"# Environment\n - Primary working directory: {cwd}\n - Platform: linux\n"
    return {"role": "system", "content": [{"type": "text", "text": text}]}


def assistant(*texts: str, tool: str | None = None, tool_name: str = "Bash") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    if tool is not None:
        content.append({"type": "tool_use", "id": f"toolu_{tool}", "name": tool_name, "input": {}})
    return {"role": "assistant", "content": content}


def tool_result(text: str, tool: str = "x") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{tool}", "content": text}],
    }


def body(*messages: dict[str, Any], system: str = "You are Claude Code.") -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc"},
            {"type": "text", "text": system},
        ],
        "messages": list(messages),
        "stream": True,
    }
