"""The bridge's state file holds no secret; a queued one is never sent redacted.

The file (queue, drafts, open prompts) is written scrubbed. A message typed while
the agent works is kept raw in memory only: sent whole by the bridge that queued
it, and, when the bridge restarted before sending it, the conversation is told
to send it again (nothing is sent to the agent). On the real daemon, CLI and
scripted model, with the in-memory platform.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.bridges.state import (
    BridgeState,
    ConversationState,
    OpenPrompt,
    Queued,
    StateFile,
)
from agentdeck.settings import Settings
from tests.bridges.memplatform import (
    CHANNEL,
    MALLORY,
    MemoryPlatform,
    agent_of,
    bridged,
    message,
    settled,
)
from tests.bridges.test_core_daemon import WAIT_FOR_GO, _async, gated, texts
from tests.support.served import serving
from tests.support.waiting import eventually

KEY = "xoxb-" + "2048337165-5713298441-Vq7Rm2Lx9Kd4Wc8Zp1Hs6Nd3"
SECRET_TEXT = f"use the slack token {KEY} for the post"
GOT = "GOT-THE-WHOLE-TOKEN"


def test_the_file_is_written_scrubbed_and_a_queued_secret_is_marked_not_kept(
    tmp_path: Path,
) -> None:
    conv = ConversationState(
        agent_id="a1",
        busy=True,
        draft=f"draft with {KEY}",
        sealed=[f"chunk with {KEY}"],
        queue=[Queued(SECRET_TEXT, "memory:2:mallory"), Queued("plain words", "memory:1:a")],
    )
    prompt = OpenPrompt(CHANNEL.key, "m1", "permission", f"Allow curl -H 'Bearer {KEY}'?")
    state = BridgeState(position=7, conversations={CHANNEL.key: conv}, prompts={"r1": prompt})
    file = StateFile(tmp_path / "b.json")
    file.save(state)

    assert KEY.encode() not in (tmp_path / "b.json").read_bytes()
    assert state.conversations[CHANNEL.key].queue[0].text == SECRET_TEXT  # in memory: whole
    loaded = file.load().conversations[CHANNEL.key]
    assert [(q.kept, "[REDACTED:" in q.text) for q in loaded.queue] == [
        (False, True),
        (True, False),
    ]
    assert loaded.queue[1].text == "plain words"


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_queued_secret_is_sent_whole_or_after_a_restart_asked_for_again(
    settings: Settings, tmp_path: Path
) -> None:
    wait = {"tool_use": {"name": "Bash", "input": {"command": WAIT_FOR_GO}}}
    work, defaults = gated(
        tmp_path,
        [
            {"reply": [wait]},
            {"reply": [{"text": "FIRST-DONE"}]},
            {"when": {"user_text_contains": KEY}, "reply": [{"text": GOT}]},
            {"reply": [wait]},
            {"reply": [{"text": "THIRD-DONE"}]},
        ],
    )
    platform = MemoryPlatform()
    state = tmp_path / "b.json"
    async with serving(settings) as served:
        # 1. Queued while the agent works, sent whole by the same bridge.
        async with bridged(served, platform, state, agent=defaults) as bridge:
            await bridge.handle(message(platform, "go on"))
            agent = await agent_of(served, bridge)
            await bridge.handle(message(platform, SECRET_TEXT, author=MALLORY))
            await eventually(
                _async(lambda: bridge.state.conversations[CHANNEL.key].queue),
                what="the message queued",
            )
            assert KEY.encode() not in state.read_bytes()
            (work / "go").write_text("")
            await eventually(_async(lambda: GOT in texts(platform)), timeout=90, what=GOT)
            await settled(served, agent["id"], 2)
            (work / "go").unlink()

            # 2. Queued again behind a new turn; the bridge is gone before it is sent.
            await bridge.handle(message(platform, "once more"))
            await eventually(
                _async(lambda: texts(platform).count("▸ Bash: while") == 2),
                timeout=60,
                what="the second wait",
            )
            await bridge.handle(message(platform, SECRET_TEXT, author=MALLORY))
            await eventually(
                _async(lambda: bridge.state.conversations[CHANNEL.key].queue),
                what="the message queued again",
            )
        assert KEY.encode() not in state.read_bytes()
        (work / "go").write_text("")
        await settled(served, agent["id"], 3)
        async with bridged(served, platform, state, agent=defaults) as bridge:
            await eventually(
                _async(lambda: "held a secret" in texts(platform)),
                timeout=60,
                what="the conversation told the message was not kept",
            )
            conv = bridge.state.conversations[CHANNEL.key]
            assert conv.queue == [] and not conv.busy
        async with served.api() as api:
            events = (await api.get("/api/events", params={"agent": agent["id"]})).json()
    sent = [e["data"]["text"] for e in events["events"] if e["type"] == "user_message_sent"]
    assert len(sent) == 3 and sent[2] == "once more", sent
    assert texts(platform).count(GOT) == 1
    assert KEY.encode() not in state.read_bytes()
    assert KEY.encode() not in (tmp_path / "b-actions.jsonl").read_bytes()
