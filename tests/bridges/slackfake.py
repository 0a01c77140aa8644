"""A local fake of Slack's Web API (a real HTTP server on 127.0.0.1, port 0) that
records every call, and Socket Mode envelopes as Slack sends them.

Envelopes are handed to the bolt app at the seam bolt's own Socket Mode
handler uses: ``SocketModeRequest.from_dict(envelope)`` then
``run_async_bolt_app(app, request)`` (what ``AsyncSocketModeHandler`` does
with each frame read from the websocket); the websocket itself is not faked.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.request import SocketModeRequest

BOT_USER, BOT_ID, TEAM = "UBOT", "BBOT", "T0001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    auth: str


@dataclass
class FakeSlack:
    base_url: str = ""
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # ts -> the message
    _ts: Any = field(default_factory=lambda: itertools.count(1))

    def called(self, method: str) -> list[dict[str, Any]]:
        return [c.args for c in self.calls if c.method == method]

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The bot's messages in a thread, oldest first, as they read now."""
        return [
            m
            for m in self.messages.values()
            if m["channel"] == channel and m.get("thread_ts") == thread_ts
        ]

    def ephemeral(self, user: str) -> list[str]:
        return [a["text"] for a in self.called("chat.postEphemeral") if a["user"] == user]

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        args = {**request.query, **args}  # some methods send their arguments in the query
        for key in ("blocks", "view"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        self.calls.append(Call(method, args, request.headers.get("Authorization", "")))
        return web.json_response({"ok": True, **self._answer(method, args)})

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"user_id": BOT_USER, "bot_id": BOT_ID, "team_id": TEAM, "user": "deck"}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            self.messages[ts] = {**args, "ts": ts}
            return {"ts": ts, "channel": args["channel"]}
        if method == "chat.update":
            self.messages[args["ts"]].update(
                {k: v for k, v in args.items() if k in ("text", "blocks")}
            )
            return {"ts": args["ts"], "channel": args["channel"]}
        if method == "files.getUploadURLExternal":
            fid = f"F{next(self._ts)}"
            root = self.base_url.removesuffix("api/")
            return {"upload_url": f"{root}upload/{fid}", "file_id": fid}
        if method == "files.completeUploadExternal":
            return {"files": [{"id": f["id"]} for f in json.loads(args["files"])]}
        return {}

    async def upload(self, request: web.Request) -> web.Response:
        self.calls.append(Call("upload", {"bytes": await request.read()}, ""))
        return web.Response(text="OK")


FakeT = TypeVar("FakeT", bound=FakeSlack)


def fake_slack() -> contextlib.AbstractAsyncContextManager[FakeSlack]:
    return serving_fake(FakeSlack())


@contextlib.asynccontextmanager
async def serving_fake(fake: FakeT) -> AsyncIterator[FakeT]:
    """``fake`` (a ``FakeSlack`` or a subclass) served on 127.0.0.1, port 0."""
    app = web.Application()
    app.router.add_post("/api/{method}", fake.handle)
    app.router.add_post("/upload/{file}", fake.upload)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.base_url = f"http://127.0.0.1:{port}/api/"
    try:
        yield fake
    finally:
        await runner.cleanup()


_ids = itertools.count(1)


async def deliver(app: AsyncApp, kind: str, payload: dict[str, Any]) -> BoltResponse:
    """One Socket Mode envelope through bolt, as its handler would; returns the ack."""
    envelope = {
        "envelope_id": f"env-{next(_ids)}",
        "type": kind,
        "accepts_response_payload": kind != "events_api",
        "payload": payload,
    }
    request = SocketModeRequest.from_dict(envelope)
    assert request is not None
    response: BoltResponse = await run_async_bolt_app(app, request)
    return response


def message_event(channel: str, user: str, text: str, ts: str, **extra: Any) -> dict[str, Any]:
    event = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts, **extra}
    return {
        "token": "verification-unused",
        "team_id": TEAM,
        "api_app_id": "A0001",
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{next(_ids)}",
        "event_time": 1700000000,
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }


def button(user: str, channel: str, message: dict[str, Any], action_id: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "team": {"id": TEAM},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "trigger_id": f"trigger-{next(_ids)}",
        "channel": {"id": channel},
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel},
        "message": {"ts": message["ts"], "thread_ts": message.get("thread_ts")},
        "actions": [{"action_id": action_id, "block_id": "b", "type": "button"}],
    }


def command(user: str, channel: str, text: str) -> dict[str, Any]:
    return {
        "command": "/agentdeck",
        "text": text,
        "channel_id": channel,
        "user_id": user,
        "user_name": user.lower(),
        "team_id": TEAM,
        "trigger_id": f"trigger-{next(_ids)}",
        "response_url": "http://127.0.0.1:9/unused",
    }


def submission(user: str, view: dict[str, Any], typed: str) -> dict[str, Any]:
    """A modal the bridge opened (as ``views.open`` got it), submitted with ``typed``."""
    [block] = view["blocks"]
    value = {"type": "plain_text_input", "value": typed}
    return {
        "type": "view_submission",
        "team": {"id": TEAM},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "view": {
            **view,
            "id": f"V{next(_ids)}",
            "state": {"values": {block["block_id"]: {block["element"]["action_id"]: value}}},
        },
    }
