"""The plugin's hook launcher reaching a deck by its URL and a token (the ``url`` and
``token`` options, ``POST /api/hooks/event``) instead of the home's socket: the
real launcher and hook client as Claude Code starts them, a real daemon app on
127.0.0.1 whose home is not the one the hook is given."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentSource
from agentdeck.core.roles import Role
from agentdeck.hooks import hookclient_http, hookclient_impl
from agentdeck.settings import Settings
from tests.hooks.payloads import sample
from tests.plugin.support import SCRIPTS, claude_env
from tests.web.conftest import RunningDaemon, running_daemon

pytestmark = pytest.mark.anyio

SESSION = "5e551011-0000-4000-8000-0000000000a1"


async def _hook(env: dict[str, str], payload: dict[str, Any]) -> tuple[int, str, str, float]:
    """The launcher for one event: exit code, stdout, stderr, seconds taken."""
    began = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPTS / "agentdeck-hook"),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(payload).encode()), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode(), time.monotonic() - began


async def _token(daemon: RunningDaemon, name: str, role: Role) -> str:
    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    await identity.add_user(name, role)
    _, secret = await identity.create_token(name, name="plugin")
    return secret


def _env(tmp_path: Path, url: str, token: str, **extra: str) -> dict[str, str]:
    """The hook's environment: the plugin's options, a home with no daemon."""
    other = tmp_path / "other-home"
    other.mkdir(exist_ok=True)
    return claude_env(
        tmp_path,
        CLAUDE_PLUGIN_OPTION_HOME=str(other),
        CLAUDE_PLUGIN_OPTION_URL=url,
        CLAUDE_PLUGIN_OPTION_TOKEN=token,
        CLAUDE_PLUGIN_DATA=str(tmp_path / "data"),
        CLAUDE_PROJECT_DIR=str(tmp_path),
        **extra,
    )


@pytest.fixture
async def daemon(settings: Settings) -> Any:
    async with running_daemon(settings) as running:
        yield running


async def test_a_session_reports_by_url_and_token_as_the_tokens_user(
    tmp_path: Path, daemon: RunningDaemon
) -> None:
    alice = await _token(daemon, "alice", Role.OPERATOR)
    # The shell's own AGENTDECK_URL/TOKEN name another deck: the options win.
    env = _env(tmp_path, daemon.url, alice, AGENTDECK_URL="http://127.0.0.1:9", AGENTDECK_TOKEN="x")
    for name in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        code, out, err, _ = await _hook(env, sample(name, session_id=SESSION, cwd=str(tmp_path)))
        assert (code, err) == (0, ""), (name, out, err)
    agent = await daemon.deck._store.agent_for_session(SESSION, AgentSource.EXTERNAL)
    assert agent is not None
    assert agent.spec.owner == "alice"
    assert agent.cwd == str(tmp_path)
    # nothing the launcher keeps holds the token
    data = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert data and not [p for p in data if alice.encode() in p.read_bytes()]


async def test_a_wrong_token_falls_back_quietly_and_nothing_is_recorded(
    tmp_path: Path, daemon: RunningDaemon
) -> None:
    before = (await daemon.deck._store.stats()).last_event_id
    env = _env(tmp_path, daemon.url, "adk_" + "w" * 40)
    for name in ("SessionStart", "PreToolUse"):
        code, out, err, _ = await _hook(env, sample(name, session_id=SESSION))
        assert (code, out) == (0, ""), (name, out, err)  # Claude Code's own rules decide
        assert err.strip() == "agentdeck hook: the deck refused the token (HTTP 401)"
    assert (await daemon.deck._store.stats()).last_event_id == before
    assert await daemon.deck._store.agent_for_session(SESSION, AgentSource.EXTERNAL) is None


async def test_a_deck_that_is_down_falls_back_at_once(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = _env(tmp_path, f"http://127.0.0.1:{port}", "adk_" + "t" * 40)
    code, out, err, took = await _hook(env, sample("PreToolUse", session_id=SESSION))
    assert (code, out) == (0, "")
    assert "connection refused" in err
    assert took < hookclient_impl.MAX_DEADLINE  # a bound, not a timing: never a hang


async def test_a_hung_deck_falls_back_at_the_clients_deadline(tmp_path: Path) -> None:
    """A server that accepts and never answers: the deadline of hooks.json holds."""
    home = tmp_path / "other-home"
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps({"deadline": 0.5}))
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(4)
        env = _env(tmp_path, f"http://127.0.0.1:{hung.getsockname()[1]}", "adk_" + "t" * 40)
        code, out, err, _ = await _hook(env, sample("SessionStart", session_id=SESSION))
    assert (code, out) == (0, "")
    assert "no answer from the deck within 0.5 s" in err


def test_the_clients_variable_names_are_the_http_modules() -> None:
    assert hookclient_impl.URL_ENV == hookclient_http.URL_ENV
    assert hookclient_impl.REMOTE_ENV == hookclient_http.ENV


async def test_the_cli_takes_the_same_url_rules(tmp_path: Path) -> None:
    """``AGENTDECK_URL`` for the commands that open a deck (``agentdeck mcp`` among
    them): what the hook client refuses, the CLI refuses, in the same words."""
    from pydantic import SecretStr

    from agentdeck.cli.decks import by_url
    from agentdeck.errors import ConfigError
    from tests.conftest import make_settings

    def settings(url: str, token: str = "adk_" + "t" * 40, **more: Any) -> Settings:
        return make_settings(tmp_path).model_copy(
            update={"url": url, "token": SecretStr(token), **more}
        )

    for url, said in [
        ("http://deck.example", "plain http to deck.example"),
        ("file:///etc/passwd", "not a URL of the form"),
    ]:
        with pytest.raises(ConfigError, match=said):
            by_url(settings(url))
    with pytest.raises(ConfigError, match="AGENTDECK_TOKEN holds characters"):
        by_url(settings("https://deck.example", "adk_x\r\nX-Evil: 1"))
    remote = by_url(settings("http://deck.example/", allow_insecure_url=True))
    try:
        assert remote.http.url == "http://deck.example"
    finally:
        await remote.aclose()


async def test_a_call_put_to_a_person_is_waited_for_past_the_deadline_over_http(
    tmp_path: Path, settings: Settings
) -> None:
    """The daemon says a person is asked (a pending line), then answers after the
    client's own deadline: over HTTP, as over the socket, the client waits for it."""
    from agentdeck.hooks.protocol import HookReply, HookRequest

    decided = '{"hookSpecificOutput": {"hookEventName": "PreToolUse"}}\n'

    async def asking(request: HookRequest) -> HookReply:
        assert request.pending is not None and request.owner == "admin"
        await request.pending(10.0)
        await asyncio.sleep(3.0)  # past the 2 s deadline of hooks.json
        return HookReply(stdout=decided)

    def configure(deck: Any) -> None:
        deck._hooks.handle = asking

    async with running_daemon(settings, configure=configure) as daemon:
        env = _env(tmp_path, daemon.url, daemon.token)
        (tmp_path / "other-home" / "hooks.json").write_text(json.dumps({"deadline": 2.0}))
        code, out, err, _ = await _hook(env, sample("PreToolUse", session_id=SESSION))
    assert (code, out, err) == (0, decided, "")


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"HTTP/1.1 401 Unauthorized\r\n\r\n", "refused the token (HTTP 401)"),
        (b"HTTP/1.1 403 Forbidden\r\n\r\n", "HTTP 403: operator needed"),
        (b"HTTP/1.1 421 Misdirected Request\r\n\r\n", "AGENTDECK_ALLOWED_HOSTS"),
        (b"HTTP/1.1 502 Bad Gateway\r\nServer: proxy\r\n\r\n", "answered HTTP 502"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not HTTP"),
        (b"HTTP/1.0 200 OK\r\n", "without an answer"),
    ],
)
def test_what_the_deck_answers_besides_200_is_said_in_one_line(head: bytes, said: str) -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(head)
        theirs.shutdown(socket.SHUT_WR)
        with pytest.raises(
            hookclient_http.Failed, match=said.replace("(", r"\(").replace(")", r"\)")
        ):
            hookclient_http.answer_head(ours, time.monotonic() + 5)


def test_a_200_gives_what_follows_its_head() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b'HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\r\n{"exit":0')
        assert hookclient_http.answer_head(ours, time.monotonic() + 5) == b'{"exit":0'
