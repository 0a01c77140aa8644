"""The Slack bridge: Socket Mode envelopes handed to the real bolt app (at the
seam bolt's Socket Mode handler uses, see ``slackfake``), its Web API calls
answered and recorded by a local fake Slack server, driving the real daemon,
the real Claude Code CLI and the scripted model."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_sdk.web.async_client import AsyncWebClient

from agentdeck.bridges.slack.app import Frontend, build_app
from agentdeck.bridges.slack.platform import MESSAGE_LIMIT, SlackPlatform
from agentdeck.bridges.text import open_fence
from agentdeck.settings import Settings
from tests.bridges.memplatform import bridged, settled
from tests.bridges.slackfake import (
    button,
    command,
    deliver,
    fake_slack,
    message_event,
    submission,
)
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SERVED, UNLISTED = "C0SERVED", "C0OTHER"
ALICE, MALLORY = "UALICE", "UMALLORY"
BOT_TOKEN = "xoxb-1111-2222-secret-bot-token"
CODE = "\n".join(f"    total += compute({i})  # step {i} of the long loop" for i in range(150))
FENCED = (
    f"Here is the code:\n```python\ndef run():\n    total = 0\n{CODE}\n    return total\n```\nDone."
)


def scenario(tmp_path: Path, name: str, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "turns": turns}))
    return str(path)


def _async(probe: Any) -> Any:
    async def run() -> Any:
        return probe()

    return run


def config(**agent: Any) -> dict[str, Any]:
    return {
        "channels": frozenset({SERVED}),
        "approvers": frozenset({ALICE}),
        "agent": agent,
    }


async def test_a_message_becomes_a_thread_and_its_reply_comes_back_chunked(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # slack_sdk and bolt log every request at DEBUG
    seq = {"tool_use": {"name": "Bash", "input": {"command": "seq 1 600"}}}
    play = scenario(tmp_path, "code", [{"reply": [seq]}, {"reply": [{"text": FENCED}]}])
    async with fake_slack() as slack, serving(settings) as served:
        web = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        platform = SlackPlatform(web)
        async with bridged(
            served, platform, tmp_path / "s.json", **config(scenario=play, allow=["Bash(seq *)"])
        ) as bridge:
            app = build_app(Frontend(bridge, web))
            # Not served: another channel, a bot, an edit. Then a member in the channel.
            await deliver(app, "events_api", message_event(UNLISTED, ALICE, "psst", "1.000001"))
            bot = message_event(SERVED, "UOTHERBOT", "beep", "1.000002", bot_id="B0OTHER")
            await deliver(app, "events_api", bot)
            edited = message_event(SERVED, ALICE, "x", "1.000003", subtype="message_changed")
            await deliver(app, "events_api", edited)
            ack = await deliver(
                app,
                "events_api",
                message_event(SERVED, ALICE, "show me <!channel> code", "1.000010"),
            )
            assert ack.status == 200
            key = f"{SERVED}/1.000010"
            agent_id = await eventually(
                _async(
                    lambda: (bridge.state.conversations.get(key) or None)
                    and bridge.state.conversations[key].agent_id
                ),
                timeout=60,
                what="the thread's agent",
            )
            await settled(served, agent_id, 1)
            await eventually(
                _async(lambda: any("Done." in m["text"] for m in slack.thread(SERVED, "1.000010"))),
                timeout=60,
                what="the reply's end",
            )

            # /agentdeck status: about the channel's newest thread, to the member only.
            # Listeners run after the ack, so each answer is awaited before the next command.
            for n, (channel, text) in enumerate(
                [(SERVED, "status"), (UNLISTED, "status"), (SERVED, "fly")], start=1
            ):
                await deliver(app, "slash_commands", command(MALLORY, channel, text))
                await eventually(
                    _async(lambda n=n: len(slack.ephemeral(MALLORY)) == n),
                    timeout=30,
                    what=f"answer {n}",
                )
            async with served.api() as api:
                agents = (await api.get("/api/agents")).json()["agents"]
                events = (await api.get("/api/events", params={"agent": agent_id})).json()
    status, refused, usage = slack.ephemeral(MALLORY)
    assert status == f"slack-{SERVED}/1.000010 ({agent_id}): idle, 2 turn(s)"
    assert refused == "This channel is not served."
    assert usage.startswith("Usage: /agentdeck new")
    assert [a["id"] for a in agents] == [agent_id], "only the served channel's message"
    sent = [e["data"]["text"] for e in events["events"] if e["type"] == "user_message_sent"]
    assert sent == ["show me <!channel> code"]
    tool, *chunks = [m["text"] for m in slack.thread(SERVED, "1.000010")]
    assert tool == "▸ Bash: seq 1 600"
    [upload] = [c.args["bytes"] for c in slack.calls if c.method == "upload"]
    assert upload.decode().split() == [str(i) for i in range(1, 601)], "the long output, a file"
    [done] = slack.called("files.completeUploadExternal")
    assert done["channel_id"] == SERVED and done["thread_ts"] == "1.000010"
    assert len(chunks) >= 3, chunks
    assert all(len(c) <= MESSAGE_LIMIT and open_fence(c) is None for c in chunks)
    assert all(c.startswith("```python\n") for c in chunks[1:-1])
    lines = [line for c in chunks for line in c.splitlines() if "compute(" in line]
    assert lines == CODE.splitlines(), "the code whole, in order, each line once"
    assert slack.called("chat.update"), "the reply grew in one message, edited"
    reactions = {(a["name"], a["timestamp"]) for a in slack.called("reactions.add")}
    assert ("eyes", "1.000010") in reactions and ("hourglass_flowing_sand", "1.000010") in reactions
    assert ("hourglass_flowing_sand", "1.000010") in {
        (a["name"], a["timestamp"]) for a in slack.called("reactions.remove")
    }
    assert not [
        c
        for c in slack.calls
        if c.args.get("channel") == UNLISTED and c.method != "chat.postEphemeral"
    ]
    assert {c.auth for c in slack.calls if c.method != "upload"} == {f"Bearer {BOT_TOKEN}"}
    assert "chat.postMessage" in caplog.text and BOT_TOKEN not in caplog.text


async def test_approval_buttons_answer_for_listed_members_only(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "asks.yaml"
    profile.write_text(yaml.safe_dump({"name": "asks", "default": "ask", "allow": ["Read"]}))
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    play = scenario(tmp_path, "touch", [{"reply": [touch]}, {"reply": [{"text": "Made it."}]}])
    agent = {"scenario": play, "profile": str(profile), "cwd": str(work)}
    async with fake_slack() as slack, serving(settings) as served:
        web = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        async with bridged(
            served, SlackPlatform(web), tmp_path / "s.json", **config(**agent)
        ) as bridge:
            app = build_app(Frontend(bridge, web))
            await deliver(app, "events_api", message_event(SERVED, MALLORY, "make it", "2.000001"))

            def prompts() -> list[dict[str, Any]]:
                return [m for m in slack.thread(SERVED, "2.000001") if m.get("blocks")]

            [asked] = await eventually(_async(prompts), timeout=60, what="the approval prompt")
            # From the button (the core records the prompt only after Slack answered).
            request = asked["blocks"][-1]["elements"][0]["action_id"].split(":")[-1]
            await eventually(
                _async(lambda: request in bridge.state.prompts), timeout=30, what="the prompt open"
            )
            [_, actions] = asked["blocks"]
            assert [e["action_id"] for e in actions["elements"]] == [
                f"agentdeck:allow:{request}",
                f"agentdeck:always:{request}",
                f"agentdeck:deny:{request}",
            ]
            assert "asks to use Bash: touch made.txt" in asked["text"]
            # Mallory asked, but may not answer: neither Allow nor Deny (no modal either).
            for action in ("allow", "deny"):
                press = button(MALLORY, SERVED, asked, f"agentdeck:{action}:{request}")
                assert (await deliver(app, "interactive", press)).status == 200
            await eventually(
                _async(lambda: len(slack.ephemeral(MALLORY)) == 2), timeout=30, what="refusals"
            )
            assert slack.called("views.open") == []
            # Alice may.
            await deliver(
                app, "interactive", button(ALICE, SERVED, asked, f"agentdeck:allow:{request}")
            )
            await eventually(
                _async(lambda: "actions" not in [b["type"] for b in asked["blocks"]]),
                timeout=60,
                what="the prompt closed",
            )
            agent_id = bridge.state.conversations[f"{SERVED}/2.000001"].agent_id
            assert agent_id is not None
            await settled(served, agent_id, 1)
            async with served.api() as api:
                answered = (await api.get(f"/api/approvals/{request}")).json()
    assert (
        slack.ephemeral(MALLORY)
        == ["You may not answer approvals here: ask someone with the approver role."] * 2
    )
    assert slack.ephemeral(ALICE) == ["Allowed."]
    assert (work / "made.txt").exists()
    assert (
        answered["state"] == "allowed"
        and answered["answered_by"] == f"user:bridge:slack:{ALICE}:ualice"
    )
    assert asked["text"].endswith("✅ Allowed by ualice."), asked["text"]


async def test_deny_asks_for_a_reason_in_a_modal(settings: Settings, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "asks.yaml"
    profile.write_text(yaml.safe_dump({"name": "asks", "default": "ask", "allow": ["Read"]}))
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    play = scenario(tmp_path, "touch", [{"reply": [touch]}, {"reply": [{"text": "Understood."}]}])
    agent = {"scenario": play, "profile": str(profile), "cwd": str(work)}
    async with fake_slack() as slack, serving(settings) as served:
        web = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        async with bridged(
            served, SlackPlatform(web), tmp_path / "s.json", **config(**agent)
        ) as bridge:
            app = build_app(Frontend(bridge, web))
            await deliver(app, "events_api", message_event(SERVED, ALICE, "make it", "3.000001"))

            def prompts() -> list[dict[str, Any]]:
                return [m for m in slack.thread(SERVED, "3.000001") if m.get("blocks")]

            [asked] = await eventually(_async(prompts), timeout=60, what="the approval prompt")
            # From the button (the core records the prompt only after Slack answered).
            request = asked["blocks"][-1]["elements"][0]["action_id"].split(":")[-1]
            await eventually(
                _async(lambda: request in bridge.state.prompts), timeout=30, what="the prompt open"
            )
            await deliver(
                app, "interactive", button(ALICE, SERVED, asked, f"agentdeck:deny:{request}")
            )
            [opened] = await eventually(
                _async(lambda: slack.called("views.open")), timeout=30, what="the reason modal"
            )
            view = opened["view"]
            assert view["callback_id"] == f"agentdeck:deny-why:{request}"
            # The modal names its thread; a forged one naming another channel does nothing.
            forged = {**view, "private_metadata": '{"c": "C0OTHER/3.000001"}'}
            await deliver(app, "interactive", submission(ALICE, forged, "nope"))
            await deliver(app, "interactive", submission(ALICE, view, "not in this repo"))
            await eventually(
                _async(lambda: "actions" not in [b["type"] for b in asked["blocks"]]),
                timeout=60,
                what="the prompt closed",
            )
            async with served.api() as api:
                answered = (await api.get(f"/api/approvals/{request}")).json()
    assert slack.ephemeral(ALICE) == ["Denied."]
    assert not (work / "made.txt").exists()
    assert answered["state"] == "denied" and answered["message"] == "not in this repo"
    assert asked["text"].endswith("⛔ Denied by ualice: not in this repo"), asked["text"]
