"""A chat bridge loses nothing while its platform is down: a post the platform
cannot take for now (no connection, 500, 429) is one log line, kept, and tried
again with backoff (a 429's Retry-After as asked); what follows waits behind
it, so the chat reads every chunk once, in order, when the platform answers
again. A restart with chunks still undelivered delivers them.

End to end: the real daemon, the real Claude Code CLI on the scripted model,
the real Slack Web API client against a local fake Slack that fails for a
while. Without a daemon: the conversation worker on an in-memory platform
whose errors are discord.py's."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import discord
import pytest
import yaml
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from agentdeck.bridges.conversation import ConversationWorker
from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon import connect
from agentdeck.bridges.delivery import Retry, passes, retry_after
from agentdeck.bridges.platform import Actor, Conversation
from agentdeck.bridges.slack.app import Frontend, build_app
from agentdeck.bridges.slack.platform import MESSAGE_LIMIT, SlackPlatform
from agentdeck.bridges.state import ConversationState
from agentdeck.bridges.text import open_fence
from agentdeck.settings import Settings
from tests.bridges.memplatform import CHANNEL, MemoryPlatform, agent_event, bridged, settled
from tests.bridges.slackfake import FakeSlack, deliver, message_event, serving_fake
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio]

SERVED, ALICE = "C0SERVED", "UALICE"
BOT_TOKEN = "xoxb-1111-2222-secret-bot-token"
FAST = Retry(max_delay=0.2, first_delay=0.05)
CODE = "\n".join(f"    total += compute({i})  # step {i} of the long loop" for i in range(150))
FENCED = (
    f"Here is the code:\n```python\ndef run():\n    total = 0\n{CODE}\n    return total\n```\nDone."
)
POSTS = frozenset({"chat.postMessage", "chat.update"})


def _async(probe: Any) -> Any:
    async def run() -> Any:
        return probe()

    return run


@dataclass
class FlakySlack(FakeSlack):
    """The fake Slack, down for posts while ``outage`` lists answers to give
    (an HTTP status, or (429, seconds) for a rate limit with Retry-After)."""

    outage: list[int | tuple[int, int]] = field(default_factory=list)
    refused: list[tuple[float, str, int]] = field(default_factory=list)  # when, method, status
    taken: list[tuple[float, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if method in POSTS and self.outage:
            answer = self.outage.pop(0)
            if isinstance(answer, tuple):
                status, seconds = answer
                self.refused.append((time.monotonic(), method, status))
                return web.json_response(
                    {"ok": False, "error": "ratelimited"},
                    status=status,
                    headers={"Retry-After": str(seconds)},
                )
            self.refused.append((time.monotonic(), method, answer))
            return web.Response(status=answer, text="<html>upstream down</html>")
        if method in POSTS:
            self.taken.append((time.monotonic(), method))
        return await super().handle(request)


@pytest.fixture
async def slack() -> AsyncIterator[FlakySlack]:
    async with serving_fake(FlakySlack()) as fake:
        yield fake


BRIDGE_LOGGERS = ("agentdeck.bridges", "slack_sdk", "slack_bolt", "discord")


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """The bridge's lines (and its platform libraries') carry no traceback."""
    ours = [r for r in caplog.records if r.name.startswith(BRIDGE_LOGGERS)]
    assert ours, "the bridge logged nothing"
    assert not [r for r in ours if r.exc_info or r.stack_info], [
        r.getMessage() for r in ours if r.exc_info
    ]
    assert "Traceback" not in "\n".join(r.getMessage() for r in ours)


async def test_a_reply_posted_while_slack_fails_arrives_whole_once_in_order(
    settings: Settings, tmp_path: Path, slack: FlakySlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdeck")
    play = tmp_path / "code.yaml"
    play.write_text(yaml.safe_dump({"name": "code", "turns": [{"reply": [{"text": FENCED}]}]}))
    config = {
        "channels": frozenset({SERVED}),
        "approvers": frozenset({ALICE}),
        "agent": {"scenario": str(play)},
        "retry": FAST,
    }
    # Slack is down for the reply's first posts: three 5xx, then a rate limit of 1 s.
    slack.outage = [500, 502, 503, (429, 1)]
    async with serving(settings) as served:
        web_client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        async with bridged(served, SlackPlatform(web_client), tmp_path / "s.json", **config) as b:
            app = build_app(Frontend(b, web_client))
            await deliver(app, "events_api", message_event(SERVED, ALICE, "code", "5.000001"))
            key = f"{SERVED}/5.000001"
            agent_id = await eventually(
                _async(
                    lambda: key in b.state.conversations and b.state.conversations[key].agent_id
                ),
                timeout=60,
                what="the thread's agent",
            )
            await settled(served, agent_id, 1)
            conv = b.state.conversations[key]
            await eventually(
                _async(lambda: not conv.busy and not conv.sealed and not conv.draft),
                timeout=60,
                what="the reply delivered whole",
            )
    chunks = [m["text"] for m in slack.thread(SERVED, "5.000001")]
    assert len(chunks) >= 3, chunks
    assert all(len(c) <= MESSAGE_LIMIT and open_fence(c) is None for c in chunks)
    lines = [line for c in chunks for line in c.splitlines() if "compute(" in line]
    assert lines == CODE.splitlines(), "the code whole, in order, each line once"
    assert chunks[0].startswith("Here is the code:") and chunks[-1].endswith("Done.")
    assert [status for _, _, status in slack.refused] == [500, 502, 503, 429]
    # One line per failed try, each saying it is kept; the rate limit waited as asked.
    kept = [r.getMessage() for r in caplog.records if "kept, try" in r.getMessage()]
    assert len(kept) == 4, kept
    # (The first post is the draft when the text's first words came before it whole.)
    posts = (
        f"slack: a reply chunk in {key} failed (",
        f"slack: the reply's draft in {key} failed (",
    )
    assert all(m.startswith(posts) for m in kept), kept
    assert kept[-1].endswith("try 5 in 1 s"), kept
    limited = slack.refused[-1][0]
    assert min(t for t, _ in slack.taken) - limited >= 0.9
    no_traceback(caplog)
    assert BOT_TOKEN not in caplog.text


async def test_an_approval_asked_while_slack_fails_is_posted_once_it_answers(
    settings: Settings, tmp_path: Path, slack: FlakySlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdeck")
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "asks.yaml"
    profile.write_text(yaml.safe_dump({"name": "asks", "default": "ask", "allow": ["Read"]}))
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    play = tmp_path / "touch.yaml"
    play.write_text(
        yaml.safe_dump(
            {"name": "touch", "turns": [{"reply": [touch]}, {"reply": [{"text": "Ok"}]}]}
        )
    )
    config = {
        "channels": frozenset({SERVED}),
        "approvers": frozenset({ALICE}),
        "agent": {"scenario": str(play), "profile": str(profile), "cwd": str(work)},
        "retry": FAST,
    }
    async with serving(settings) as served:
        web_client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        async with bridged(served, SlackPlatform(web_client), tmp_path / "s.json", **config) as b:
            app = build_app(Frontend(b, web_client))
            # Down from the first post on (the tool line, then the prompt), for six tries.
            slack.outage = [503] * 6
            await deliver(app, "events_api", message_event(SERVED, ALICE, "make", "6.000001"))

            def prompts() -> list[dict[str, Any]]:
                return [m for m in slack.thread(SERVED, "6.000001") if m.get("blocks")]

            [asked] = await eventually(_async(prompts), timeout=60, what="the approval prompt")
            request = asked["blocks"][-1]["elements"][0]["action_id"].split(":")[-1]
            await eventually(
                _async(lambda: request in b.state.prompts), timeout=30, what="the prompt open"
            )
            # Answered from the chat, the agent goes on and ends its turn.
            assert await b.decide(Actor("slack", ALICE, "ualice"), request, "allow") == "Allowed."
            agent_id = b.state.conversations[f"{SERVED}/6.000001"].agent_id
            assert agent_id is not None
            await settled(served, agent_id, 1)
    assert (work / "made.txt").exists()
    assert "asks to use Bash: touch made.txt" in asked["text"]
    assert len(slack.refused) == 6
    assert len([m for m in slack.thread(SERVED, "6.000001") if m.get("blocks")]) == 1
    kept = [r.getMessage() for r in caplog.records if "kept, try" in r.getMessage()]
    assert len(kept) == 6, kept
    no_traceback(caplog)


# -- the worker alone, on an in-memory platform failing with discord.py's errors --------------


@dataclass
class Answer:
    """The HTTP answer discord.py's errors are made from (an aiohttp response)."""

    status: int
    reason: str
    headers: dict[str, str] = field(default_factory=dict)


def discord_error(status: int, reason: str, **headers: str) -> discord.HTTPException:
    """What discord.py raises once its own retries of a request are spent."""
    kind = discord.DiscordServerError if status >= 500 else discord.HTTPException
    if status == 403:
        kind = discord.Forbidden
    return kind(Answer(status, reason, headers), {"message": "upstream said no", "code": 0})


class FlakyPlatform(MemoryPlatform):
    """Fails sends and edits with ``failures`` (popped one per call) until empty."""

    def __init__(self, limit: int = 2000) -> None:
        super().__init__(limit)
        self.failures: list[BaseException] = []
        self.tries = 0

    def _maybe_fail(self) -> None:
        self.tries += 1
        if self.failures:
            raise self.failures.pop(0)

    async def send(self, conversation: Conversation, text: str) -> str:
        self._maybe_fail()
        return await super().send(conversation, text)

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None:
        self._maybe_fail()
        await super().edit(conversation, message_id, text)


def bridge_on(platform: MemoryPlatform, state: Path) -> Bridge:
    # Nothing here reaches the daemon: the worker is fed events, or its state.
    deck = connect("http://127.0.0.1:9", "unused")
    config = BridgeConfig(channels=frozenset({CHANNEL.channel}), edit_interval=0, retry=FAST)
    return Bridge(platform, deck, state, config)


async def test_a_restart_with_sealed_chunks_delivers_them_once_the_platform_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdeck")
    state = tmp_path / "b.json"
    before = bridge_on(MemoryPlatform(), state)
    # As a bridge stopped while the platform was down left it: three chunks sealed, unsent.
    chunks = [f"Chunk {i}: " + "word " * 40 for i in range(3)]
    before.state.conversations[CHANNEL.key] = ConversationState(
        agent_id="ag1", cursor=7, sealed=list(chunks)
    )
    before.save()

    platform = FlakyPlatform()
    platform.failures = [
        ConnectionResetError("Connection reset by peer"),
        discord_error(503, "Service Unavailable"),
        discord_error(429, "Too Many Requests", **{"Retry-After": "0.3"}),
    ]
    again = bridge_on(platform, state)
    async with asyncio.TaskGroup() as tg:
        again._tg = tg
        worker = tg.create_task(ConversationWorker(again, CHANNEL).run())
        conv = again.state.conversations[CHANNEL.key]
        await eventually(_async(lambda: not conv.sealed), timeout=30, what="the chunks delivered")
        worker.cancel()
    assert platform.said() == chunks, "each once, in order"
    assert platform.tries == 3 + 3
    kept = [r.getMessage() for r in caplog.records if "kept, try" in r.getMessage()]
    assert [m.split(" failed (")[1].split(")")[0] for m in kept] == [
        "ConnectionResetError: Connection reset by peer",
        "DiscordServerError: 503 Service Unavailable (error code: 0",
        "HTTPException: 429 Too Many Requests (error code: 0",
    ]
    assert kept[-1].endswith("try 4 in 0.3 s"), kept
    no_traceback(caplog)
    # What was delivered is written down: a second restart sends nothing again.
    third = bridge_on(MemoryPlatform(), state)
    assert third.state.conversations[CHANNEL.key].sealed == []


async def test_a_reply_chunk_refused_for_good_is_one_line_and_the_rest_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdeck")
    platform = FlakyPlatform(limit=120)
    bridge = bridge_on(platform, tmp_path / "b.json")
    bridge.state.conversations[CHANNEL.key] = ConversationState(agent_id="ag1", busy=True)
    platform.failures = [discord_error(403, "Forbidden")]  # no retry changes that
    words = "\n".join(f"line {i} of the answer" for i in range(12))
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_event(agent_event(1, "assistant_text", {"text": words}))
        await worker._on_event(agent_event(2, "state_changed", {"old": "running", "new": "idle"}))
    said = platform.said()
    assert said and "line 0 of" not in said[0], "the refused first chunk is not posted"
    assert said[-1].endswith("line 11 of the answer")
    lines = [line for m in said for line in m.splitlines()]
    assert lines == [line for line in words.splitlines() if line in lines]
    assert len(set(lines)) == len(lines)
    refused = [r.getMessage() for r in caplog.records if "for good" in r.getMessage()]
    assert len(refused) == 1 and "Forbidden: 403 Forbidden" in refused[0], refused
    assert not [r for r in caplog.records if "kept, try" in r.getMessage()]
    no_traceback(caplog)
    conv = bridge.state.conversations[CHANNEL.key]
    assert conv.sealed == [] and conv.draft == "" and conv.cursor == 2


@pytest.mark.parametrize(
    ("error", "kept", "asked"),
    [
        (discord_error(429, "Too Many Requests", **{"retry-after": "2.5"}), True, 2.5),
        (discord_error(429, "Too Many Requests", **{"Retry-After": "soon"}), True, None),
        (discord_error(429, "Too Many Requests", **{"Retry-After": "-1"}), True, None),
        (discord_error(429, "Too Many Requests", **{"Retry-After": "inf"}), True, None),
        (discord_error(502, "Bad Gateway"), True, None),
        (TimeoutError(), True, None),
        (discord_error(404, "Not Found"), False, None),
    ],
)
def test_what_is_kept_and_how_long_a_rate_limit_asks(
    error: BaseException, kept: bool, asked: float | None
) -> None:
    assert passes(error) is kept
    assert retry_after(error) == asked


async def test_a_bridge_restarted_on_the_daemon_delivers_its_sealed_chunks(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdeck")
    state = tmp_path / "b.json"
    left = bridge_on(MemoryPlatform(), state)
    chunks = [f"Part {i} of what the agent said before the outage." for i in range(4)]
    left.state.position = 0
    left.state.conversations[CHANNEL.key] = ConversationState(
        agent_id="a-gone-since", cursor=3, sealed=list(chunks)
    )
    left.save()
    platform = FlakyPlatform()
    platform.failures = [discord_error(503, "Service Unavailable")] * 2
    async with serving(settings) as served, bridged(served, platform, state, retry=FAST) as b:
        conv = b.state.conversations[CHANNEL.key]
        await eventually(_async(lambda: not conv.sealed), timeout=30, what="the chunks delivered")
    assert platform.said() == chunks
    assert platform.tries == 2 + 4
    assert len([r for r in caplog.records if "kept, try" in r.getMessage()]) == 2
    no_traceback(caplog)
