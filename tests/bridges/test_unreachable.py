"""A bridge whose platform cannot be reached: one line per failed try (what
failed, the error, when the next try comes), waits that double up to a cap, and
after AGENTDECK_BRIDGE_CONNECT_ATTEMPTS tries a clear exit (non-zero, one line
and its hint, no traceback). What no retry fixes (a refused token) stops at once.

The platform is a real local endpoint: a port nothing listens on, a socket that
takes connections and never answers, a server answering 500 or 401; the daemon
is the real one, the bridge the real ``agentdeck bridge`` command."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentdeck.bridges.reconnect import Attempts, Backoff, PlatformUnreachable, reason
from agentdeck.errors import ConfigError
from tests.conftest import make_settings
from tests.support.deckcli import Done, deck, deck_argv, deck_env
from tests.support.receiver import Hung, Receiver
from tests.support.served import serving
from tests.support.waiting import eventually

DISCORD_TOKEN = "MTIzNDU2Nzg5.secret-discord-token.XYZ"
SLACK_BOT, SLACK_APP = "xoxb-1234-5678-secret-bot-token", "xapp-1-A0001-9999-secret-app-token"
TRIES = re.compile(
    r"^WARNING \S+: (Discord|Slack): (.+?) failed \((.+)\); try (\d) of 3 in (\S+) s$"
)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that nothing listens on (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return deck_env(
        tmp_path,
        **{
            "AGENTDECK_BRIDGE_CONNECT_ATTEMPTS": "3",
            "AGENTDECK_BRIDGE_RETRY_MAX_SECONDS": "0.2",
            "AGENTDECK_BRIDGE_CONNECT_TIMEOUT_SECONDS": "5",
            "AGENTDECK_DISCORD_TOKEN": DISCORD_TOKEN,
            "AGENTDECK_DISCORD_GUILDS": "[1]",
            "AGENTDECK_DISCORD_CHANNELS": "[2]",
            "AGENTDECK_SLACK_BOT_TOKEN": SLACK_BOT,
            "AGENTDECK_SLACK_APP_TOKEN": SLACK_APP,
            "AGENTDECK_SLACK_CHANNELS": '["C0123"]',
            **extra,
        },
    )


async def bridge(tmp_path: Path, platform: str, **extra: str) -> Done:
    """``agentdeck bridge PLATFORM`` against a running daemon, to its end."""
    async with serving(make_settings(tmp_path)):
        return await asyncio.to_thread(
            deck, env_for(tmp_path, **extra), "bridge", platform, timeout=120
        )


def assert_clear_exit(done: Done, platform: str, what: str, error: str) -> None:
    """Two lines for the two failed tries before the last, then the error and its hint."""
    assert done.code == 1, done.err
    assert "Traceback" not in done.err, done.err
    lines = done.err.splitlines()
    assert len(lines) == 4, done.err
    tries = [TRIES.match(line) for line in lines[:2]]
    assert all(tries), lines[:2]
    assert [(m[1], m[2], m[4]) for m in tries if m] == [
        (platform, what, "2"),
        (platform, what, "3"),
    ]
    assert all(error in m[3] for m in tries if m), lines[:2]
    assert [float(m[5]) for m in tries if m] == [0.2, 0.2]  # 1 s, 2 s: capped
    assert lines[2].startswith(f"error: the {platform} bridge stopped: {platform} could not be ")
    assert "reached in 3 tries over " in lines[2] and f"(last: {what}: " in lines[2]
    assert error in lines[2], lines[2]
    assert "AGENTDECK_BRIDGE_CONNECT_ATTEMPTS" in lines[3]
    for secret in (DISCORD_TOKEN, SLACK_BOT, SLACK_APP):
        assert secret not in done.out + done.err


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "env", "path", "platform", "what"),
    [
        # It was a TaskGroup traceback at the first failure.
        ("discord", "AGENTDECK_DISCORD_API_URL", "api/v10", "Discord", "logging in"),
        # It retried for ever, a traceback every 10 s.
        (
            "slack",
            "AGENTDECK_SLACK_API_URL",
            "api/",
            "Slack",
            "asking for a Socket Mode address",
        ),
    ],
)
async def test_refusing_connections_is_three_lines_and_an_exit(
    tmp_path: Path, refused_port: int, kind: str, env: str, path: str, platform: str, what: str
) -> None:
    done = await bridge(tmp_path, kind, **{env: f"http://127.0.0.1:{refused_port}/{path}"})
    assert_clear_exit(done, platform, what, f"Cannot connect to host 127.0.0.1:{refused_port}")


@pytest.mark.anyio
async def test_discord_that_never_answers_fails_each_try_at_its_deadline(tmp_path: Path) -> None:
    hung = Hung()
    try:
        done = await bridge(
            tmp_path,
            "discord",
            AGENTDECK_DISCORD_API_URL=hung.url.removesuffix("/hook") + "/api/v10",
            AGENTDECK_BRIDGE_CONNECT_TIMEOUT_SECONDS="0.5",
        )
    finally:
        hung.close()
    assert_clear_exit(done, "Discord", "logging in", "no answer within 0.5 s")


@pytest.mark.anyio
async def test_discord_refusing_the_token_stops_at_once(tmp_path: Path) -> None:
    server = Receiver(then=401, body=b'{"message": "401: Unauthorized", "code": 0}')
    try:
        done = await bridge(
            tmp_path,
            "discord",
            AGENTDECK_DISCORD_API_URL=server.url.removesuffix("/hook") + "/api/v10",
        )
    finally:
        server.close()
    assert done.code == 1 and "Traceback" not in done.err, done.err
    assert [r.path for r in server.received] == ["/api/v10/users/@me"], "tried once"
    assert "error: Discord refused the bot token" in done.err
    assert "try 2 of" not in done.err and DISCORD_TOKEN not in done.out + done.err


@pytest.mark.anyio
async def test_slack_answering_500_is_retried_then_an_exit(tmp_path: Path) -> None:
    server = Receiver(then=500, body=b'{"ok": false, "error": "internal_error"}')
    try:
        done = await bridge(
            tmp_path, "slack", AGENTDECK_SLACK_API_URL=server.url.removesuffix("hook") + "api/"
        )
    finally:
        server.close()
    assert_clear_exit(done, "Slack", "asking for a Socket Mode address", "internal_error")
    assert [r.path for r in server.received] == ["/api/apps.connections.open"] * 3
    assert all(r.headers["Authorization"] == f"Bearer {SLACK_APP}" for r in server.received)


@pytest.mark.anyio
async def test_slack_refusing_the_app_token_stops_at_once(tmp_path: Path) -> None:
    server = Receiver(then=200, body=b'{"ok": false, "error": "invalid_auth"}')
    try:
        done = await bridge(
            tmp_path, "slack", AGENTDECK_SLACK_API_URL=server.url.removesuffix("hook") + "api/"
        )
    finally:
        server.close()
    assert done.code == 1 and "Traceback" not in done.err, done.err
    assert len(server.received) == 1
    assert "error: Slack refused the app-level token (invalid_auth)" in done.err
    assert "try 2 of" not in done.err and SLACK_APP not in done.out + done.err


# -- the retry policy itself ---------------------------------------------------------


def test_the_wait_doubles_from_a_second_up_to_the_cap() -> None:
    backoff = Backoff(attempts=10, max_delay=20, timeout=5)
    assert [backoff.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 20, 20]
    assert backoff.delay(10_000) == 20


@pytest.mark.anyio
async def test_a_connection_made_starts_the_count_anew() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    attempts = Attempts("Discord", Backoff(attempts=3, max_delay=60, timeout=5), sleep=sleep)
    for _ in range(2):
        await attempts.failed("the gateway", ConnectionResetError("reset"))
    attempts.succeeded()
    await attempts.failed("the gateway", ConnectionResetError("reset"))
    await attempts.failed("the gateway", ConnectionResetError("reset"))
    with pytest.raises(PlatformUnreachable) as stopped:
        await attempts.failed("the gateway", ConnectionResetError("reset"))
    assert waits == [1, 2, 1, 2]
    assert "in 3 tries" in str(stopped.value)
    assert "last: the gateway: ConnectionResetError: reset" in str(stopped.value)


def test_what_ended_a_task_group_is_the_bridges_own_error_when_there_is_one() -> None:
    ours = ConfigError("Discord refused the bot token")
    group = ExceptionGroup("tasks", [ExceptionGroup("inner", [ours])])
    assert reason(group) is ours
    bug = ExceptionGroup("tasks", [KeyError("x")])
    assert reason(bug) is bug


@pytest.mark.anyio
async def test_slack_dropping_a_connection_it_cannot_make_again_is_an_exit(tmp_path: Path) -> None:
    """Connected over Socket Mode (a local websocket), then Slack goes away: the
    library's reconnection goes through the same tries, and the bridge exits."""
    from aiohttp import WSMsgType, web

    sockets: list[web.WebSocketResponse] = []

    async def open_connection(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{port}/link"})

    async def link(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": 1})
        async for message in ws:
            if message.type == WSMsgType.ERROR:
                break
        return ws

    app = web.Application()
    app.router.add_post("/api/apps.connections.open", open_connection)
    app.router.add_get("/link", link)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    env = env_for(
        tmp_path,
        AGENTDECK_SLACK_API_URL=f"http://127.0.0.1:{port}/api/",
        AGENTDECK_LOG_LEVEL="INFO",
    )
    async with serving(make_settings(tmp_path)):
        proc = await asyncio.create_subprocess_exec(
            *deck_argv("bridge", "slack"),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stderr is not None
            seen: list[str] = []
            async with asyncio.timeout(60):
                while "Slack: connected over Socket Mode" not in "".join(seen):
                    line = (await proc.stderr.readline()).decode()
                    assert line, "".join(seen)
                    seen.append(line)
            for ws in sockets:
                await ws.close()
            await runner.cleanup()  # Slack is gone: the port refuses
            async with asyncio.timeout(90):
                rest = (await proc.stderr.read()).decode()
                code = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert code == 1, rest
    assert "Traceback" not in rest, rest
    tries = [line for line in rest.splitlines() if TRIES.match(line)]
    assert len(tries) == 2, rest
    assert "error: the Slack bridge stopped: Slack could not be reached in 3 tries" in rest
    assert rest.count("could not be reached") == 1, "said once"


@pytest.mark.anyio
async def test_a_slack_bridge_beside_the_daemon_that_cannot_reach_slack_stops_in_one_line(
    tmp_path: Path, refused_port: int
) -> None:
    env = env_for(
        tmp_path,
        AGENTDECK_BRIDGES='["slack"]',
        AGENTDECK_SLACK_API_URL=f"http://127.0.0.1:{refused_port}/api/",
    )
    started = deck(env, "up", "--detach", timeout=60)
    assert started.code == 0, started.err
    log = Path(env["AGENTDECK_HOME"]) / "logs" / "daemon.log"
    try:

        async def stopped() -> bool:
            return (
                log.exists() and "the Slack bridge stopped; the daemon serves on" in log.read_text()
            )

        await eventually(stopped, timeout=60, what="the bridge's end in the log")
        status = deck(env, "status", timeout=60)
        assert status.code == 0 and status.out.startswith("agentdeck daemon on "), status.out
    finally:
        deck(env, "down", timeout=60)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert text.count("Slack: asking for a Socket Mode address failed (") == 2
    assert "Slack could not be reached in 3 tries" in text
    assert SLACK_APP not in text and SLACK_BOT not in text
