"""What a chat bridge shows, as text: pure, no I/O.

- ``split_message``: a reply cut into platform-sized chunks that never break a
  code block (a fence open at a cut is closed there and opened again, with its
  info string, at the top of the next chunk);
- ``tool_line``: one compact line per tool call (``▸ Bash: pytest -q``);
- ``approval_text`` / ``resolved_text`` / ``ask_text``: the prompts people answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

TOOL_MARK = "▸"
DETAIL_LIMIT = 120  # characters of a tool call's detail on its line
ANSWER_SHOWN = 200  # characters of an answer repeated under its question
REASON_SHOWN = 200
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class _Fence:
    marker: str  # "```" or "~~~~"
    opener: str  # the whole opening line, without its newline

    def closes(self, line: str) -> bool:
        m = _FENCE.match(line.rstrip("\r\n"))
        return (
            m is not None
            and m.group(1)[0] == self.marker[0]
            and len(m.group(1)) >= len(self.marker)
            and not m.group(2).strip()
        )


def _opens(line: str) -> _Fence | None:
    m = _FENCE.match(line.rstrip("\r\n"))
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return _Fence(m.group(1), line.rstrip("\r\n"))


def open_fence(text: str) -> _Fence | None:
    """The code block still open at the end of ``text``, if any."""
    fence: _Fence | None = None
    for line in text.splitlines(keepends=True):
        if fence is None:
            fence = _opens(line)
        elif fence.closes(line):
            fence = None
    return fence


def balanced(text: str) -> str:
    """``text`` with a code block left open at its end closed (for a draft shown
    while the rest of it is still being written)."""
    fence = open_fence(text)
    if fence is None:
        return text
    return text + ("" if text.endswith("\n") else "\n") + fence.marker


def split_message(text: str, limit: int) -> list[str]:
    """``text`` in chunks of at most ``limit`` characters, cut at line ends where
    possible; each chunk's code blocks are whole. No chunk is only whitespace; an
    empty text gives no chunk."""
    return [head + body + tail for head, body, tail in split_parts(text, limit)]


def split_parts(text: str, limit: int) -> list[tuple[str, str, str]]:
    """The chunks as ``(reopened fence, text, closing fence)``: the middles joined
    are ``text`` again, but for runs of whitespace that would have been a chunk
    of their own."""
    if limit < 32:
        raise ValueError(f"a message limit of {limit} characters is too small to split into")
    parts: list[tuple[str, str, str]] = []
    head, body = "", ""
    fence: _Fence | None = None  # the block open where ``body`` ends

    def reopen(f: _Fence | None) -> str:
        if f is None:
            return ""
        # An opener too long to repeat (a huge info string) is reopened bare.
        return (f.opener if len(f.opener) <= limit // 4 else f.marker) + "\n"

    def closing(f: _Fence | None, before: str) -> str:
        if f is None:
            return ""
        return ("" if before.endswith("\n") else "\n") + f.marker

    def cut() -> None:
        nonlocal head, body
        if body:
            parts.append((head, body, closing(fence, body)))
        head, body = reopen(fence), ""

    for line in text.splitlines(keepends=True):
        after = _after(fence, line)
        if len(head) + len(body) + len(line) + len(closing(after, body + line)) <= limit:
            body += line
            fence = after
            continue
        if body:
            cut()
            if len(head) + len(line) + len(closing(after, line)) <= limit:
                body = line
                fence = after
                continue
        # The line alone does not fit: cut it into pieces inside the same block.
        while line:
            room = limit - len(head) - len(body) - len(closing(fence, "x")) - 1
            piece, line = line[:room], line[room:]
            body += piece
            if line:
                cut()
        fence = after
    if body:
        parts.append((head, body, closing(fence, body)))
    # Whitespace alone is no message (a platform refuses it): such a chunk goes.
    return [part for part in parts if part[1].strip()]


def _after(fence: _Fence | None, line: str) -> _Fence | None:
    if fence is None:
        return _opens(line)
    return None if fence.closes(line) else fence


# -- one line per tool call -------------------------------------------------------------

_DETAIL_KEYS = (
    "command", "file_path", "notebook_path", "pattern", "url", "query", "path", "prompt",
    "description", "text",
)  # fmt: skip


def tool_line(tool: str, tool_input: Mapping[str, Any]) -> str:
    """``▸ Bash: pytest -q``: the tool and what it was called on, on one line."""
    detail = ""
    for key in _DETAIL_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            detail = value
            break
    else:
        if tool_input:
            detail = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
    name = tool
    if tool.startswith("mcp__"):
        server, _, rest = tool[5:].partition("__")
        name = f"{server} {rest}" if rest else server
    detail = " ".join(detail.split())
    if len(detail) > DETAIL_LIMIT:
        detail = detail[: DETAIL_LIMIT - 1] + "…"
    return f"{TOOL_MARK} {name}: {detail}" if detail else f"{TOOL_MARK} {name}"


def append_part(draft: str, part: str, *, tool: bool, last_was_tool: bool) -> str:
    """The reply so far with one more part: tool lines follow each other on their
    own lines, text blocks are set apart by a blank line."""
    if not draft:
        return part
    sep = "\n" if tool and last_was_tool else "\n\n"
    return draft.rstrip("\n") + sep + part


def attachment_name(tool: str, tool_use_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", tool).strip("-").lower() or "tool"
    return f"{safe}-{tool_use_id[-8:] or 'output'}.txt"


# -- prompts people answer --------------------------------------------------------------


def approval_text(agent: str, tool: str, tool_input: Mapping[str, Any], reason: str | None) -> str:
    line = tool_line(tool, tool_input).removeprefix(f"{TOOL_MARK} ")
    text = f"🔐 **{agent}** asks to use {line}"
    if reason:
        text += f"\n{reason}"
    return text


def resolved_text(prompt: str, decision: str, by: str | None, reason: str | None) -> str:
    """The prompt once answered: who answered, and how."""
    who = _who(by)
    if by == "timeout" or decision == "expired":
        outcome = "⌛ Denied: nobody answered before the timeout."
    elif decision in ("allow", "allowed"):
        outcome = f"✅ Allowed by {who}."
    elif decision == "cancelled":
        outcome = "✖ Cancelled: the agent stopped before an answer."
    else:
        if reason and len(reason) > REASON_SHOWN:
            reason = reason[: REASON_SHOWN - 1] + "…"
        outcome = f"⛔ Denied by {who}" + (f": {reason}" if reason else ".")
    return f"{prompt}\n{outcome}"


def ask_text(agent: str, question: str) -> str:
    return f"❓ **{agent}** asks: {question}"


def answered_text(prompt: str, answer: str | None, by: str | None) -> str:
    if by == "timeout" or answer is None:
        return f"{prompt}\n⌛ Nobody answered before the timeout; the agent goes on."
    if len(answer) > ANSWER_SHOWN:
        answer = answer[: ANSWER_SHOWN - 1] + "…"
    return f"{prompt}\n↳ {_who(by)} answered: {answer}"


def _who(by: str | None) -> str:
    """``user:bridge:discord:123:alice`` → ``alice``; ``user:cli:bob`` → ``bob via cli``;
    other answerers as they are."""
    if not by:
        return "someone"
    if by.startswith("user:bridge:"):  # the name as the member's tag carries it
        return unquote(by.rsplit(":", 1)[-1]) or by
    channel, _, user = by.removeprefix("user:").partition(":")
    return f"{user} via {channel}" if user else channel
