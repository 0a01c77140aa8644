"""The hook socket's wire format (v1), daemon side.

One request per connection. The hook client sends one line,
``{"v":1,"event":<the hook's stdin object>,"env":{...}}``; the daemon answers
one line, ``{"exit":0,"stdout":"...","stderr":""}`` or, when it could not
decide, ``{"fallback":true,"reason":"..."}`` (the client then does what
``hooks.json`` says for the event), and closes.

Before its answer the daemon may send ``{"pending":true,"wait":S}``: a person
is asked (the approval inbox) and the answer comes within ``S`` seconds. The
client then waits that long (never past its own ceiling) instead of its short
deadline, and if nothing comes, answers "ask" (Claude Code's own prompt).

The client (``client.py`` and its sibling module) cannot import this module: it
runs with ``python -S`` and the standard library only, so it speaks the same
format by hand. ``tests/hooks`` hold both sides to it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentdeck.errors import AgentdeckError

VERSION = 1

# The variables Claude Code gives every hook that the client forwards, when set.
FORWARDED_ENV = (
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_PID",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT",
)


class MalformedRequest(AgentdeckError):
    """A request line the daemon cannot read; the message is one line for the user."""


Pending = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class HookRequest:
    event: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    # Tells the client to wait up to that many seconds for the answer (the
    # server sets it; None where nobody listens, e.g. in-process callers).
    pending: Pending | None = field(default=None, compare=False, repr=False)
    # The user a token named (``POST /api/hooks/event``): the session is theirs,
    # and another user's session is not theirs to report on. None on the socket
    # (whoever can open it is this machine's deck user).
    owner: str | None = None

    @property
    def name(self) -> str | None:
        """The hook event's name (``PreToolUse``, ...), if the payload has one."""
        name = self.event.get("hook_event_name")
        return name if isinstance(name, str) else None


@dataclass(frozen=True)
class HookReply:
    exit: int = 0
    stdout: str = ""
    stderr: str = ""
    fallback: bool = False
    reason: str = ""

    @classmethod
    def fall_back(cls, reason: str) -> HookReply:
        """The daemon could not decide: the client applies its fallback."""
        return cls(fallback=True, reason=reason)


HookHandler = Callable[[HookRequest], Awaitable[HookReply]]


def _line(obj: dict[str, Any]) -> bytes:
    # ensure_ascii keeps the line free of raw newlines whatever the strings hold.
    return json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n"


def encode_request(request: HookRequest) -> bytes:
    return _line({"v": VERSION, "event": request.event, "env": request.env})


def decode_request(line: bytes) -> HookRequest:
    """Parse one request line; ``MalformedRequest`` says what is wrong in one line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise MalformedRequest(f"request is not JSON ({_one_line(exc)})") from None
    except RecursionError:
        raise MalformedRequest("request is nested too deeply to read") from None
    if not isinstance(obj, dict):
        raise MalformedRequest(f"request is a JSON {type(obj).__name__}, not an object")
    version = obj.get("v", VERSION)
    if version != VERSION:
        raise MalformedRequest(f"request has protocol version {version!r}; this daemon speaks 1")
    event = obj.get("event")
    if not isinstance(event, dict):
        raise MalformedRequest('request has no "event" object')
    env = obj.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise MalformedRequest('request "env" is not an object of strings')
    return HookRequest(event=event, env=env)


def encode_pending(seconds: float) -> bytes:
    return _line({"pending": True, "wait": seconds})


def encode_reply(reply: HookReply) -> bytes:
    if reply.fallback:
        return _line({"fallback": True, "reason": reply.reason})
    return _line({"exit": reply.exit, "stdout": reply.stdout, "stderr": reply.stderr})


def decode_reply(line: bytes) -> HookReply:
    """Parse a reply line (what the client does by hand); ``ValueError`` if malformed."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("reply is not a JSON object")
    if obj.get("fallback") is True:
        return HookReply.fall_back(str(obj.get("reason", "")))
    code, out, err = obj.get("exit", 0), obj.get("stdout", ""), obj.get("stderr", "")
    if type(code) is not int or not isinstance(out, str) or not isinstance(err, str):
        raise ValueError("reply fields have the wrong types")
    return HookReply(exit=code, stdout=out, stderr=err)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
