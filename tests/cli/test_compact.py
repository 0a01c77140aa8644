"""``agentdeck compact`` on the real Claude Code CLI with the scripted model: a live
agent (a daemon runs it) compacts, the command says the tokens before and after,
and the log records the compaction (a ``compact_boundary`` notice); the model is
asked for the summary with the instructions given. A compaction Claude Code
declines is said as an error; a finished agent and bad instructions are refused,
nothing sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.compaction import compact_text, compaction
from agentdeck.core.events import EventType
from agentdeck.errors import UsageError
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio]


@pytest.mark.cli
async def test_compact_a_live_agent_records_it_and_says_the_tokens(
    settings: Settings, tmp_path: Path
) -> None:
    env = deck_env(tmp_path)
    async with serving(settings) as served:
        store = served.deck._store
        agent = await served.deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))

        async def idle() -> bool:
            return (await store.get_agent(agent.id)).state is AgentState.IDLE

        await eventually(idle, timeout=60, what="the agent idle after its first turn")
        done = await asyncio.to_thread(
            deck, env, "compact", agent.id, "keep the greeting", "--json"
        )
        assert done.code == 0, done.err
        said = done.json()
        assert said["agent_id"] == agent.id and said["compacted"] is True
        assert said["trigger"] == "manual"
        assert said["pre_tokens"] > said["post_tokens"] > 0, said

        notices = await store.read(agent_id=agent.id, types=[EventType.NOTICE])
        (boundary,) = [n for n in notices if n.data["kind"] == "compact_boundary"]
        meta = boundary.data["detail"]["compact_metadata"]
        assert (meta["pre_tokens"], meta["post_tokens"]) == (
            said["pre_tokens"],
            said["post_tokens"],
        )
        sent = await store.read(agent_id=agent.id, types=[EventType.USER_MESSAGE_SENT])
        assert [e.data["text"] for e in sent] == ["hello", "/compact keep the greeting"]
        # The model was asked for the summary, with the instructions.
        model = served.deck._runner.scripted_models()["chat"]
        last = [r.body for r in model.requests if r.path.endswith("/messages")][-1]
        assert "keep the greeting" in json.dumps(last)
        assert (await store.get_agent(agent.id)).state is AgentState.IDLE  # still live

        # Right after, Claude Code finds nothing to compact: said, not taken for done.
        nothing = await asyncio.to_thread(deck, env, "compact", agent.id)
        assert nothing.code != 0
        assert f"{agent.id} did not compact: Not enough messages to compact" in nothing.err

        # After another turn it compacts again, said in words.
        await served.deck.send(agent.id, "hello again")
        await eventually(idle, timeout=60, what="the agent idle after its second turn")
        again = await asyncio.to_thread(deck, env, "compact", agent.id)
        assert again.code == 0, again.err
        assert again.out.startswith(f"compacted {agent.id}: ") and "tokens" in again.out

        # A finished agent is refused; nothing is sent to it.
        await served.deck.kill(agent.id)
        refused = await asyncio.to_thread(deck, env, "compact", agent.id)
        assert refused.code != 0
        assert "only a live agent is compacted" in refused.err
        assert f"agentdeck resume {agent.id}" in refused.err
        after = await store.read(agent_id=agent.id, types=[EventType.USER_MESSAGE_SENT])
        assert len(after) == 5


def test_instructions_are_one_line_of_bounded_text() -> None:
    assert compact_text(None) == "/compact"
    assert compact_text("  ") == "/compact"
    assert compact_text(" keep the plan ") == "/compact keep the plan"
    for bad in ("two\nlines", "esc \x1b[31m", "x" * 2001):
        with pytest.raises(UsageError):
            compact_text(bad)


def test_a_boundary_says_only_counts() -> None:
    """The stream's values are read, never trusted: a count is an int, a trigger one
    of Claude Code's two."""
    good = {"detail": {"compact_metadata": {"trigger": "auto", "pre_tokens": 9, "post_tokens": 2}}}
    assert compaction(good) == {"trigger": "auto", "pre_tokens": 9, "post_tokens": 2}
    bad = {"detail": {"compact_metadata": {"trigger": "x", "pre_tokens": "9", "post_tokens": True}}}
    assert compaction(bad) == {"trigger": None, "pre_tokens": None, "post_tokens": None}
    assert compaction({"detail": {"compact_metadata": "nope"}})["pre_tokens"] is None


@pytest.mark.cli
async def test_a_busy_agent_is_not_compacted(settings: Settings, tmp_path: Path) -> None:
    """Its turn under way, the command would be queued behind it: refused, nothing sent."""
    from tests.cli.test_steering import FIRST, busy_agent

    env = deck_env(tmp_path)
    async with serving(settings) as served:
        # Busy far longer than an `agentdeck` process takes to start; killed after.
        agent = await busy_agent(served, tmp_path, [{**FIRST, "delay": 120}])
        refused = await asyncio.to_thread(deck, env, "compact", agent.id)
        assert refused.code != 0
        assert "an agent is compacted between turns" in refused.err, refused.err
        sent = await served.deck._store.read(agent_id=agent.id, types=[EventType.USER_MESSAGE_SENT])
        assert "/compact" not in [e.data["text"] for e in sent]
        assert (await served.deck.get_agent(agent.id)).state is AgentState.RUNNING
        await served.deck.kill(agent.id)
