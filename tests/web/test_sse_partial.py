"""The assistant's text as it is written, on the SSE stream (``partial=true``):
the real Claude Code CLI on the scripted model, which streams a scenario's text
in small chunks (``chunk_delay``), behind the real daemon app.

Partial edits come before the turn's ``turn_completed``, carry no id, build the
final text, never hold a secret half written or unscrubbed, and none is stored;
a stream that did not ask gets none; a client that stops reading slows no agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from agentdeck.core.partial import PartialText
from agentdeck.core.redact import scrub
from agentdeck.settings import Settings
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon
from tests.web.sseclient import Message, messages, stream_request

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TURN_SECONDS = 90.0
SECRET = "sk-ant-api03-" + "Q7v" * 30 + "AA"
WORDS = " ".join(f"word{i}" for i in range(120))
TEXT = f"Here is the answer, written slowly. {WORDS} The key was {SECRET} and that is all."


def _scenario(tmp_path: Path, text: str = TEXT, chunk_delay: float = 0.01) -> Path:
    path = tmp_path / "partial.yaml"
    turn = {"chunk_delay": chunk_delay, "reply": [{"text": text}]}
    path.write_text(yaml.safe_dump({"name": "partial", "turns": [turn]}))
    return path


async def _start(api: httpx.AsyncClient, scenario: Path) -> str:
    created = await api.post("/api/agents", json={"prompt": "say it", "scenario": str(scenario)})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def _until_turn(stream: Any, agent_id: list[str]) -> list[Message]:
    """Messages (no comments) until the agent's turn_completed, under a deadline."""
    got: list[Message] = []
    async with asyncio.timeout(TURN_SECONDS):
        async for msg in stream:
            if msg.comment is not None or msg.retry is not None:
                continue
            got.append(msg)
            if msg.event == "dropped" or (
                msg.event == "turn_completed" and msg.json()["agent_id"] in agent_id
            ):
                return got
    raise AssertionError("the stream ended before the turn completed")


async def test_partial_text_streams_before_the_turn_ends_and_is_never_stored(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path)
    started: list[str] = []
    async with (
        stream_request(api, {"partial": "true"}) as live,
        stream_request(api) as plain,
    ):
        started.append(await _start(api, scenario))
        got = await _until_turn(messages(live), started)
        without = await _until_turn(messages(plain), started)
    agent_id = started[0]

    partials = [m for m in got if m.event == "partial"]
    final = [m.json() for m in got if m.event == "assistant_text"]
    assert len(final) == 1 and final[0]["data"]["text"] == scrub(TEXT)
    # Several edits, every one before the text's event and the turn's end.
    assert len(partials) >= 3, [m.event for m in got]
    assert got.index(partials[-1]) < [m.event for m in got].index("assistant_text")
    assert all(m.id is None for m in partials)
    shown = ""
    for m in partials:
        edit = PartialText.from_dict(m.json())
        assert edit.agent_id == agent_id
        shown = edit.applied(shown)
    # What was shown is the final text up to a word still being written: scrubbed.
    assert final[0]["data"]["text"].startswith(shown) and len(shown) > len(TEXT) // 2
    assert SECRET not in json.dumps([m.data for m in partials])
    assert SECRET[:20] not in "".join(m.data for m in partials)

    # A stream that did not ask has the same events and no partial one.
    assert "partial" not in {m.event for m in without}
    assert [m.id for m in without if m.id] == [m.id for m in got if m.id]

    # The log holds the events alone: no partial, one text.
    log = await daemon.deck._store.read(agent_id=agent_id, limit=10_000)
    kinds = [e.type for e in log]
    assert "partial" not in kinds and kinds.count("assistant_text") == 1


async def test_a_client_that_stops_reading_slows_no_agent(
    settings: Settings, tmp_path: Path
) -> None:
    from tests.web.conftest import running_daemon

    def small_queues(deck: Any) -> None:
        deck._hub.max_batches = 4  # a stalled reader fills its queue at once

    scenario = _scenario(tmp_path, text=TEXT * 20, chunk_delay=0.001)
    async with (
        running_daemon(settings, configure=small_queues) as daemon,
        daemon.client() as api,
        daemon.client() as other,
        stream_request(api, {"partial": "true"}) as stalled,
        stream_request(other, {"partial": "true"}) as reading,
    ):
        assert stalled.status_code == 200
        started = [await _start(other, scenario)]
        got = await _until_turn(messages(reading), started)
        assert any(m.event == "partial" for m in got) or any(m.event == "dropped" for m in got), [
            m.event for m in got
        ]

        async def done() -> bool:
            agent = await daemon.deck.get_agent(started[0])
            return agent.turns >= 1 and not agent.state.is_busy

        await eventually(done, timeout=TURN_SECONDS, what="the agent to finish its turn")
        with contextlib.suppress(Exception):
            await stalled.aclose()


async def test_a_text_cut_short_leaves_nothing_held(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path, text=TEXT * 5, chunk_delay=0.05)
    async with stream_request(api, {"partial": "true"}) as live:
        agent_id = await _start(api, scenario)
        async with asyncio.timeout(TURN_SECONDS):
            async for msg in messages(live):
                if msg.event == "partial":
                    break
        assert daemon.deck._hub.partials.writing == 1  # the block being written, kept
        killed = await api.post(f"/api/agents/{agent_id}/kill", json={})
        assert killed.status_code == 200, killed.text

    async def let_go() -> bool:
        return daemon.deck._hub.partials.writing == 0

    await eventually(let_go, timeout=TURN_SECONDS, what="the cut text let go")
