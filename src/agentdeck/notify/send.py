"""One attempt to deliver one notification to one target.

Each raises ``Undelivered`` with a reason (never the secret, never the URL's
path) when the target did not take it. Deadlines are the caller's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import shutil
import time
import uuid

import httpx

from agentdeck.core import notify as core
from agentdeck.core.notify import Notification, Target, TargetKind

NOTIFY_SEND = "notify-send"


class Undelivered(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def desktop_available() -> bool:
    return shutil.which(NOTIFY_SEND) is not None


async def deliver(target: Target, n: Notification, http: httpx.AsyncClient) -> None:
    if target.kind is TargetKind.WEBHOOK:
        await _webhook(target, n, http)
    elif target.kind is TargetKind.NTFY:
        await _ntfy(target, n, http)
    else:
        await _desktop(n)


async def _post(http: httpx.AsyncClient, url: str, content: bytes, headers: dict[str, str]) -> None:
    try:
        response = await http.post(url, content=content, headers=headers)
    except httpx.HTTPError as exc:  # the reason is shown and logged: not the URL's path
        said = str(exc).replace(url, core.origin(url))
        raise Undelivered(f"{type(exc).__name__}: {said}" if said else type(exc).__name__) from None
    if not 200 <= response.status_code < 300:
        raise Undelivered(f"HTTP {response.status_code}")


async def _webhook(target: Target, n: Notification, http: httpx.AsyncClient) -> None:
    assert target.url is not None
    raw = core.body(n)
    ts = int(time.time())
    headers = {
        "Content-Type": "application/json",
        core.EVENT_HEADER: n.kind,
        core.DELIVERY_HEADER: uuid.uuid4().hex,
        core.TIMESTAMP_HEADER: str(ts),
    }
    if target.secret:
        headers[core.SIGNATURE_HEADER] = core.sign(target.secret, ts, raw)
    await _post(http, target.url, raw, headers)


def _header(text: str) -> str:
    """HTTP headers are Latin-1: other text goes RFC 2047-encoded, which ntfy reads."""
    if text.isascii():
        return text
    return "=?UTF-8?B?" + base64.b64encode(text.encode()).decode() + "?="


async def _ntfy(target: Target, n: Notification, http: httpx.AsyncClient) -> None:
    assert target.url is not None
    headers = {
        "Title": _header(n.title),
        "Tags": n.kind,
        "Priority": "high" if n.kind in ("approval_needed", "ask_waiting") else "default",
    }
    if n.link:
        headers["Click"] = n.link
    await _post(http, target.url, n.message.encode(), headers)


async def _desktop(n: Notification) -> None:
    exe = shutil.which(NOTIFY_SEND)
    if exe is None:
        raise Undelivered(f"{NOTIFY_SEND} is not on PATH")
    urgency = "critical" if n.kind in ("approval_needed", "ask_waiting") else "normal"
    text = n.message + (f"\n{n.link}" if n.link else "")
    proc = await asyncio.create_subprocess_exec(
        exe, "--app-name=agentdeck", f"--urgency={urgency}", "--", n.title, text,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, err = await proc.communicate()
    except BaseException:  # cancelled at the deadline: leave no process behind
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise Undelivered(
            f"{NOTIFY_SEND} exited {proc.returncode}: {err.decode(errors='replace').strip()[:200]}"
        )
