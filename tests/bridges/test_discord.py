"""The Discord bridge: discord.py's messages and interactions (faked at the seam
where discord.py hands them over) driving the real daemon, the real Claude Code
CLI and the scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import discord
import pytest
import yaml

from agentdeck.bridges.discord.bot import AnswerModal, Frontend, ReasonModal
from agentdeck.bridges.discord.platform import DiscordPlatform
from agentdeck.settings import Settings
from tests.bridges.discordfakes import (
    FakeAttachment,
    FakeChannel,
    FakeGuild,
    FakeInteraction,
    FakeMember,
    FakeRole,
    press,
    submit,
)
from tests.bridges.memplatform import bridged, settled
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

GUILD = FakeGuild(1)
OTHER_GUILD = FakeGuild(2)
ALICE = FakeMember(11, "alice", [FakeRole(501, "deckhands")])
BOB = FakeMember(12, "bob", [FakeRole(502, "admins")])
MALLORY = FakeMember(13, "mallory")
OTHER_BOT = FakeMember(14, "helper-bot", bot=True)


class Server:
    """The channels the fake gateway knows, as ``DiscordPlatform`` resolves them."""

    def __init__(self) -> None:
        self.served = FakeChannel(100, GUILD)
        self.unlisted = FakeChannel(200, GUILD)
        self.foreign = FakeChannel(300, OTHER_GUILD)  # listed, but in another guild

    def all(self) -> list[FakeChannel]:
        top = [self.served, self.unlisted, self.foreign]
        return top + [t for c in top for t in c.threads]

    async def resolve(self, channel_id: int) -> FakeChannel:
        return next(c for c in self.all() if c.id == channel_id)


def config(tmp_path: Path, **agent: Any) -> dict[str, Any]:
    return {
        "channels": frozenset({"100", "300"}),
        "approvers": frozenset({"role:deckhands"}),
        "admins": frozenset({"role:admins"}),
        "project_roots": (str(tmp_path / "projects"),),
        "agent": agent,
    }


def _async(probe: Any) -> Any:
    async def run() -> Any:
        return probe()

    return run


async def test_messages_become_prompts_and_commands_answer_in_allowed_channels_only(
    settings: Settings, tmp_path: Path
) -> None:
    server = Server()
    platform = DiscordPlatform(server.resolve)
    async with (
        serving(settings) as served,
        bridged(
            served, platform, tmp_path / "d.json", **config(tmp_path, scenario="chat")
        ) as bridge,
    ):
        front = Frontend(bridge, frozenset({GUILD.id}))
        await front.on_message(server.unlisted.post(ALICE, "not here"))
        await front.on_message(server.foreign.post(ALICE, "nor here"))
        await front.on_message(server.served.post(OTHER_BOT, "bots are not heard"))
        hello = server.served.post(ALICE, "hello @everyone")
        await front.on_message(hello)
        agent_id = await eventually(
            _async(lambda: getattr(bridge.state.conversations.get("100"), "agent_id", None)),
            timeout=60,
            what="the channel's agent",
        )
        await settled(served, agent_id, 1)
        # The reply grows in a draft as the text streams in: its last edit brings it whole.
        first = ["Hello! I am the scripted model. Ask me anything."]
        await eventually(
            _async(lambda: server.served.texts() == first), timeout=60, what="the whole reply"
        )
        assert server.served.sent[hello.id].reactions == ["👀"]
        assert server.served.typed >= 1

        status = FakeInteraction(MALLORY, server.served)
        await front.simple(status, "status")
        assert status.said() == f"discord-100 ({agent_id}): idle, 1 turn(s)"
        elsewhere = FakeInteraction(ALICE, server.unlisted)
        await front.simple(elsewhere, "status")
        assert elsewhere.said() == "This channel is not served."

        # /new: a thread per session, its agent answering there.
        new = FakeInteraction(ALICE, server.served)
        await front.new(new, "hello from a thread", None)
        [thread] = server.served.threads
        assert new.said() == f"Starting an agent. <#{thread.id}>"
        await eventually(_async(lambda: thread.texts()), timeout=60, what="the thread's reply")
        key = f"100/{thread.id}"
        assert bridge.state.conversations[key].agent_id not in (None, agent_id)
        # /new without a prompt: the thread waits for its first message.
        empty = FakeInteraction(ALICE, server.served)
        await front.new(empty, "", "reviewer")
        waiting = server.served.threads[-1]
        assert empty.said() == (
            f"Ready: the first message here starts the agent (reviewer). <#{waiting.id}>"
        )
        assert bridge.state.conversations[f"100/{waiting.id}"].template == "reviewer"
        notes = FakeAttachment("notes.txt", b"remember the milk")
        in_thread = thread.post(MALLORY, "again please", notes)
        await front.on_message(in_thread)
        again = "Hello again! This is my answer to your follow-up."
        await eventually(
            _async(lambda: thread.texts()[1:] == [again]), timeout=60, what="the follow-up's reply"
        )
        async with served.api() as api:
            agents = (await api.get("/api/agents")).json()["agents"]
            threaded = bridge.state.conversations[key].agent_id
            events = (await api.get("/api/events", params={"agent": threaded})).json()["events"]
    [workspace] = [a["cwd"] for a in agents if a["id"] == threaded]
    assert (Path(workspace) / "uploads" / "notes.txt").read_bytes() == b"remember the milk"
    said = [e["data"]["text"] for e in events if e["type"] == "user_message_sent"]
    assert said[-1] == "again please\n\n(Attached, saved in your workspace: uploads/notes.txt)"
    assert len(agents) == 2, "nothing from the unlisted channel, the other guild or the bot"
    assert server.unlisted.texts() == [] and server.foreign.texts() == []


async def test_buttons_answer_approvals_for_the_approver_role_only(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "asks.yaml"
    profile.write_text(yaml.safe_dump({"name": "asks", "default": "ask", "allow": ["Read"]}))
    play = tmp_path / "touch.yaml"
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    play.write_text(
        yaml.safe_dump(
            {"name": "touch", "turns": [{"reply": [touch]}, {"reply": [{"text": "Understood."}]}]}
        )
    )
    server = Server()
    platform = DiscordPlatform(server.resolve)
    agent = {"scenario": str(play), "profile": str(profile), "cwd": str(work)}
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "d.json", **config(tmp_path, **agent)) as bridge,
    ):
        front = Frontend(bridge, frozenset({GUILD.id}))
        await front.on_message(server.served.post(MALLORY, "make the file"))
        [asked] = await eventually(
            _async(lambda: server.served.prompts()), timeout=60, what="the approval prompt"
        )
        request = next(iter(bridge.state.prompts))
        assert asked.custom_ids() == [
            f"agentdeck:allow:{request}",
            f"agentdeck:always:{request}",
            f"agentdeck:deny:{request}",
        ]
        assert "asks to use Bash: touch made.txt" in (asked.content or "")

        # Mallory asked, but may not answer: neither Allow nor Deny.
        for action in ("allow", "deny"):
            refused = press(MALLORY, server.served, f"agentdeck:{action}:{request}")
            await front.on_interaction(refused)
            assert refused.told_privately() == [
                "You may not answer approvals here: ask someone with the approver role."
            ]
            assert refused.response.modals == []
        # Alice may: Deny opens the reason box, its submission denies.
        deny = press(ALICE, server.served, f"agentdeck:deny:{request}")
        await front.on_interaction(deny)
        [modal] = deny.response.modals
        assert isinstance(modal, ReasonModal)
        submitted = submit(ALICE, server.served, modal, "not in this repo")
        await front.on_interaction(submitted)
        assert submitted.response.deferred and submitted.told_privately() == ["Denied."]
        await eventually(_async(lambda: asked.view is None), timeout=30, what="the prompt update")
        assert (asked.content or "").endswith("⛔ Denied by alice: not in this repo")
        agent_id = bridge.state.conversations["100"].agent_id
        assert agent_id is not None
        await settled(served, agent_id, 1)
        late = press(ALICE, server.served, f"agentdeck:allow:{request}")
        await front.on_interaction(late)
        assert late.told_privately() == ["This request is no longer open."]

        # /approve lists nothing open now; /project is for admins, under the roots.
        listing = FakeInteraction(ALICE, server.served)
        await front.simple(listing, "approve")
        assert listing.said() == "No request waits for an answer here."
        project = tmp_path / "projects" / "app"
        project.mkdir(parents=True)
        by_alice = FakeInteraction(ALICE, server.served)
        await front.project(by_alice, str(project))
        assert by_alice.said() == "Only an admin may bind this channel to a project."
        outside = FakeInteraction(BOB, server.served)
        await front.project(outside, str(work))
        assert "is not a directory under an allowed project root" in outside.said()
        bound = FakeInteraction(BOB, server.served)
        await front.project(bound, str(project))
        assert bound.said() == f"New agents in this channel work in {project.resolve()}."
        async with served.api() as api:
            answered = (await api.get(f"/api/approvals/{request}")).json()
    assert not (work / "made.txt").exists()
    assert answered["state"] == "denied" and answered["message"] == "not in this repo"
    assert answered["answered_by"] == "user:bridge:discord:11:alice"


async def test_an_ask_prompt_has_a_reply_box() -> None:
    modal = AnswerModal("ask123")
    assert modal.custom_id == "agentdeck:answer:ask123"
    [field] = modal.children
    assert isinstance(field, discord.ui.TextInput) and field.required
