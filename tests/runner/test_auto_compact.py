"""A template's ``auto_compact_at`` on the real Claude Code CLI with the scripted
model: the chat scenario's turn has a context of about 13,500 tokens, so an agent
with ``auto_compact_at: 10000`` is sent ``/compact`` once after its first turn (a
notice says why; Claude Code records the compaction, trigger manual) and is idle
after it, never compacted again for the compaction's own turn; a later turn past
it (the compaction left it below) compacts it again; with 20,000 it is not
compacted. The decision (core.compaction.AutoCompaction) and the key's bounds are
tested without a process."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.compaction import (
    AUTO_COMPACT,
    AUTO_COMPACT_SKIPPED,
    AutoCompaction,
    auto_compact_reason,
    context_window,
    parse_auto_compact_at,
)
from agentdeck.core.events import EventType, Notice, TurnCompleted, UserMessageSent
from agentdeck.core.templates import apply_template, parse_template
from agentdeck.errors import TemplateError, UsageError
from agentdeck.runner.auto_compact import AutoCompactor
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


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_share_of_the_window_claude_code_reports_compacts_it(settings: Settings) -> None:
    """The chat scenario's ~13,500 tokens pass 1% of the window Claude Code reports
    for the scripted model's turn (its result's modelUsage), whatever that window."""
    async with serving(settings) as served:
        store = served.deck._store
        agent = await served.deck.create_agent(
            AgentSpec(prompt="hello", scenario="chat", auto_compact_at=0.01)
        )

        async def compacted_and_idle() -> list[dict[str, object]] | None:
            said = [e.data for e in await store.read(agent_id=agent.id, types=[EventType.NOTICE])]
            done = (await store.get_agent(agent.id)).state is AgentState.IDLE
            return said if done and "compact_boundary" in [n["kind"] for n in said] else None

        said = await eventually(compacted_and_idle, timeout=90, what="compacted, then idle")
        (why,) = [n for n in said if n["kind"] == AUTO_COMPACT]
        assert AUTO_COMPACT_SKIPPED not in [n["kind"] for n in said]
        turns = await store.read(agent_id=agent.id, types=[EventType.TURN_COMPLETED])
        context = turns[0].data["input_tokens"]
        detail = why["detail"]
        assert isinstance(detail, dict) and detail["share"] == 0.01
        window = detail["context_window"]
        assert isinstance(window, int) and context > window // 100, (context, window)
        assert detail["auto_compact_at"] == window // 100
        assert why["message"] == auto_compact_reason(context, 0.01, window)
        assert why["message"].endswith(f"passed 1% of the {window:,}-token window")
        sent = await store.read(agent_id=agent.id, types=[EventType.USER_MESSAGE_SENT])
        assert [e.data["text"] for e in sent] == ["hello", "/compact"]
        assert (await served.deck.get_agent(agent.id)).spec.auto_compact_at == 0.01
        await served.deck.kill(agent.id)


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
    "bad",
    [
        True,
        "10000",
        "0.8",
        10_000.0,
        0,
        -5,
        999,
        2_000_001,
        [10_000],
        {"n": 1},
        1,
        False,
        0.0,
        1.0,
        -0.5,
        1.5,
        float("nan"),
        float("inf"),
    ],  # fmt: skip
)
def test_a_bad_value_is_refused(bad: object) -> None:
    with pytest.raises(UsageError, match="auto_compact_at must be") as refused_here:
        parse_auto_compact_at(bad)
    said = str(refused_here.value)  # both forms named
    assert "share of the model's context window between 0 and 1" in said, said
    assert "whole number of tokens between 1,000 and 2,000,000" in said, said
    with pytest.raises(TemplateError) as refused:
        parse_template({"name": "w", "description": "d", "auto_compact_at": bad}, "body", "x/w.md")
    (line,) = [str(p) for p in refused.value.problems]
    assert line.startswith("x/w.md: auto_compact_at: must be"), line


def test_the_key_reaches_the_spec() -> None:
    for good in (1_000, 150_000, 2_000_000, 0.8, 0.01, 0.999):
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


def test_a_share_reaches_the_spec_and_survives_its_round_trips() -> None:
    template = parse_template(
        {"name": "w", "description": "d", "auto_compact_at": 0.8}, "body", "x/w.md"
    )
    assert template.auto_compact_at == 0.8
    assert type(template).from_dict(template.to_dict()) == template
    spec = apply_template(template, AgentSpec(prompt="go"))
    assert spec.auto_compact_at == 0.8
    assert AgentSpec.from_dict(spec.to_dict()) == spec
    assert AgentSpec.from_dict({"prompt": "x", "auto_compact_at": 1.5}).auto_compact_at is None


def test_a_share_is_of_the_window_the_turn_reported() -> None:
    auto = AutoCompaction(0.8)
    assert auto.threshold is None  # no window known yet: no threshold
    assert not auto.turn_ended(150_000, window=200_000)  # 160,000 not passed
    assert auto.threshold == 160_000
    assert auto.turn_ended(170_000, window=200_000)
    auto.boundary(post_tokens=20_000)
    assert not auto.turn_ended(170_000, window=200_000)  # the compaction's own turn
    assert auto.turn_ended(170_000, window=200_000)  # it fell below: armed again
    # The same context under a larger window (another model) is no reason.
    auto = AutoCompaction(0.8)
    assert not auto.turn_ended(170_000, window=1_000_000)
    # No window reported: never a guess, not even the last turn's.
    auto = AutoCompaction(0.8)
    assert not auto.turn_ended(100, window=200_000)
    assert not auto.turn_ended(190_000, window=None)
    assert auto.threshold is None
    assert auto_compact_reason(13_470, 0.8, 200_000) == (
        "context 13,470 tokens passed 80% of the 200,000-token window"
    )
    assert auto_compact_reason(13_470, 0.125, 200_000).startswith(
        "context 13,470 tokens passed 12.5%"
    )
    assert (
        auto_compact_reason(13_470, 10_000) == "context 13,470 tokens passed auto_compact_at 10,000"
    )


def test_the_window_is_the_turns_models_never_a_guess() -> None:
    usage = {
        "claude-opus-5-5": {"inputTokens": 12_302, "contextWindow": 1_000_000},
        "claude-haiku-5": {"inputTokens": 300, "contextWindow": 200_000},
    }
    assert context_window(usage, "claude-opus-5-5") == 1_000_000
    assert context_window(usage, "claude-haiku-5") == 200_000
    named = {"us.anthropic.claude-x-v1": {"canonicalModel": "claude-x", "contextWindow": 400_000}}
    assert context_window(named, "claude-x") == 400_000
    assert context_window(usage, None) is None  # two models, none named: no guess
    assert context_window({"m": {"contextWindow": 200_000}}, None) == 200_000
    assert context_window(usage, "claude-other") is None
    for bad in (None, {}, [], {"m": {"contextWindow": "200000"}}, {"m": {"contextWindow": True}}):
        assert context_window(bad, "m") is None
    assert context_window({"m": {"inputTokens": 1}}, "m") is None


def _turn(context: int) -> TurnCompleted:
    return TurnCompleted(
        agent_id="a1", ts=0.0, subtype="success", is_error=False, terminal_reason=None,
        result="ok", session_id="s", num_turns=1, duration_ms=1, cost_usd=None,
        input_tokens=context,
    )  # fmt: skip


@dataclass
class _Assistant:  # the SDK's AssistantMessage, as far as it is read
    model: str
    parent_tool_use_id: str | None = None


@dataclass
class _Result:  # the SDK's ResultMessage, as far as it is read
    model_usage: dict[str, object] | None


def test_the_compactor_takes_the_turns_model_and_says_a_missing_window_once() -> None:
    compactor = AutoCompactor("a1", 0.01)
    usage = {
        "claude-opus-5-5": {"contextWindow": 1_000_000},
        "claude-haiku-5": {"contextWindow": 200_000},
    }
    assert (
        compactor.observe([], between_turns=False, message=_Assistant("claude-haiku-5", "tool-1"))
        == []
    )
    compactor.observe([], between_turns=False, message=_Assistant("claude-opus-5-5"))
    notice, sent = compactor.observe([_turn(13_470)], between_turns=True, message=_Result(usage))
    assert isinstance(notice, Notice) and notice.kind == AUTO_COMPACT
    assert notice.message == "context 13,470 tokens passed 1% of the 1,000,000-token window"
    assert notice.detail == {
        "context_tokens": 13_470, "auto_compact_at": 10_000, "share": 0.01,
        "context_window": 1_000_000,
    }  # fmt: skip
    assert isinstance(sent, UserMessageSent) and sent.text == "/compact"
    assert compactor.notices() == []

    blind = AutoCompactor("a2", 0.01)
    for _ in range(3):  # no window reported: nothing sent, said once
        assert blind.observe([_turn(50_000)], between_turns=True, message=_Result(None)) == []
    (said,) = blind.notices()
    assert isinstance(said, Notice) and said.kind == AUTO_COMPACT_SKIPPED
    assert said.message == (
        "auto_compact_at 1% of the context window is not applied: the turn's result did "
        "not report its model's context window"
    )
    assert blind.notices() == []
    tokens = AutoCompactor("a3", 10_000)  # the tokens form needs no window
    assert len(tokens.observe([_turn(13_470)], between_turns=True, message=_Result(None))) == 2
    assert tokens.notices() == []
