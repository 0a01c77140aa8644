"""A template's ``auto_compact_at`` on the real Claude Code CLI with the scripted
model: the chat scenario's turn has a context of about 13,500 tokens, so an agent
with ``auto_compact_at: 10000`` is sent ``/compact`` once after its first turn (a
notice says why; Claude Code records the compaction, trigger manual) and is idle
after it, never compacted again for the compaction's own turn; a later turn past
it (the compaction left it below) compacts it again; with 20,000 it is not
compacted. The decision (core.compaction.AutoCompaction) and the key's bounds are
tested without a process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.compaction import (
    AUTO_COMPACT,
    AutoCompaction,
    auto_compact_reason,
    parse_auto_compact_at,
)
from agentdeck.core.events import EventType
from agentdeck.core.templates import apply_template, parse_template
from agentdeck.errors import TemplateError, UsageError
from agentdeck.settings import Settings
from tests.support.served import serving
from tests.support.waiting import eventually


@pytest.mark.anyio
@pytest.mark.cli
async def test_an_agent_past_its_auto_compact_at_is_compacted_once(settings: Settings) -> None:
    async with serving(settings) as served:
        store = served.deck._store
        low = await served.deck.create_agent(
            AgentSpec(prompt="hello", scenario="chat", auto_compact_at=10_000)
        )
        high = await served.deck.create_agent(
            AgentSpec(prompt="hello", scenario="chat", auto_compact_at=20_000)
        )

        async def notices(agent_id: str) -> list[dict[str, object]]:
            return [e.data for e in await store.read(agent_id=agent_id, types=[EventType.NOTICE])]

        async def compacted_and_idle() -> bool:
            agent = await store.get_agent(low.id)
            kinds = [n["kind"] for n in await notices(low.id)]
            return agent.state is AgentState.IDLE and "compact_boundary" in kinds

        async def idle(agent_id: str) -> bool:
            return (await store.get_agent(agent_id)).state is AgentState.IDLE

        await eventually(compacted_and_idle, timeout=90, what="the agent compacted, then idle")
        await eventually(lambda: idle(high.id), timeout=60, what="the other agent idle")

        said = await notices(low.id)
        (why,) = [n for n in said if n["kind"] == AUTO_COMPACT]
        turns = await store.read(agent_id=low.id, types=[EventType.TURN_COMPLETED])
        context = turns[0].data["input_tokens"]
        assert context > 10_000
        assert why["message"] == auto_compact_reason(context, 10_000)
        assert why["message"].startswith(
            f"context {context:,} tokens passed auto_compact_at 10,000"
        )
        (boundary,) = [n for n in said if n["kind"] == "compact_boundary"]
        assert boundary["detail"]["compact_metadata"]["trigger"] == "manual"  # type: ignore[index]
        sent = await store.read(agent_id=low.id, types=[EventType.USER_MESSAGE_SENT])
        assert [e.data["text"] for e in sent] == ["hello", "/compact"]
        assert len(turns) == 2  # its turn, then the compaction's: nothing after it

        # The compaction left it below the threshold: a turn past it again compacts again.
        await served.deck.send(low.id, "hello again")

        async def twice_and_idle() -> bool:
            kinds = [n["kind"] for n in await notices(low.id)]
            return kinds.count("compact_boundary") == 2 and await idle(low.id)

        await eventually(twice_and_idle, timeout=90, what="a second compaction, then idle")
        sent = await store.read(agent_id=low.id, types=[EventType.USER_MESSAGE_SENT])
        assert [e.data["text"] for e in sent] == ["hello", "/compact", "hello again", "/compact"]
        assert len(await store.read(agent_id=low.id, types=[EventType.TURN_COMPLETED])) == 4

        # Under its threshold: nothing sent, nothing said.
        sent = await store.read(agent_id=high.id, types=[EventType.USER_MESSAGE_SENT])
        assert [e.data["text"] for e in sent] == ["hello"]
        assert AUTO_COMPACT not in [n["kind"] for n in await notices(high.id)]
        await served.deck.kill(low.id)
        await served.deck.kill(high.id)


def test_it_fires_once_past_the_threshold_and_again_only_after_it_fell_below() -> None:
    auto = AutoCompaction(10_000)
    assert not auto.turn_ended(9_000)
    assert auto.turn_ended(13_500)  # past it: compact
    auto.boundary(post_tokens=2_000)
    assert not auto.turn_ended(13_500)  # the compaction's own turn: the size before it
    assert not auto.turn_ended(4_000)
    assert auto.turn_ended(11_000)  # grew past it again


def test_a_compaction_that_left_it_above_or_was_declined_does_not_loop() -> None:
    auto = AutoCompaction(10_000)
    assert auto.turn_ended(50_000)
    auto.boundary(post_tokens=12_000)  # still above after compacting
    assert not auto.turn_ended(50_000)
    assert not auto.turn_ended(14_000)  # not again until it was below
    assert not auto.turn_ended(9_000)
    assert auto.turn_ended(10_001)
    # Declined (nothing to compact: no boundary): the answer to the /compact is no
    # reason, nor the turns after it until the context was below the threshold.
    assert not auto.turn_ended(10_500)
    assert not auto.turn_ended(12_000)


def test_a_turn_it_cannot_be_compacted_after_leaves_it_for_a_later_one() -> None:
    auto = AutoCompaction(10_000)
    assert not auto.turn_ended(20_000, idle=False)  # stopping, failed, one-shot…
    assert auto.turn_ended(21_000)
    auto.boundary(post_tokens=None)  # a boundary that says no count: stays disarmed
    assert not auto.turn_ended(21_000)
    assert not auto.turn_ended(22_000)


def test_claude_codes_own_compaction_turn_is_no_reason() -> None:
    auto = AutoCompaction(10_000)
    auto.boundary(post_tokens=3_000)  # trigger auto, or `agentdeck compact`
    assert not auto.turn_ended(30_000)
    assert auto.turn_ended(30_000)


@pytest.mark.parametrize(
    "bad", [True, "10000", 10_000.0, 0, -5, 999, 2_000_001, [10_000], {"n": 1}]
)
def test_a_bad_value_is_refused(bad: object) -> None:
    with pytest.raises(UsageError, match="auto_compact_at must be"):
        parse_auto_compact_at(bad)
    with pytest.raises(TemplateError) as refused:
        parse_template({"name": "w", "description": "d", "auto_compact_at": bad}, "body", "x/w.md")
    (line,) = [str(p) for p in refused.value.problems]
    assert line.startswith("x/w.md: auto_compact_at: must be"), line


def test_the_key_reaches_the_spec() -> None:
    for good in (1_000, 150_000, 2_000_000):
        assert parse_auto_compact_at(good) == good
    template = parse_template(
        {"name": "w", "description": "d", "auto_compact_at": 150_000}, "body", "x/w.md"
    )
    assert template.auto_compact_at == 150_000
    assert type(template).from_dict(template.to_dict()) == template
    spec = apply_template(template, AgentSpec(prompt="go"))
    assert spec.auto_compact_at == 150_000
    assert AgentSpec.from_dict(spec.to_dict()) == spec
    mine = apply_template(template, replace(AgentSpec(prompt="go"), auto_compact_at=5_000))
    assert mine.auto_compact_at == 5_000  # the caller's wins
    assert AgentSpec(prompt="go").to_dict()["auto_compact_at"] is None
    assert AgentSpec.from_dict({"prompt": "x", "auto_compact_at": "9"}).auto_compact_at is None
