"""``run``, ``send`` and ``resume`` follow an agent through either deck the same way
(``cli.steer.follow`` over ``Deck.follow``): what they print, when they stop, the
exit code."""

from __future__ import annotations

import json

import pytest

from agentdeck.cli import steer
from agentdeck.cli.remote_follow import AnswerTo
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.deck import Deck
from agentdeck.errors import NotFound
from tests.contract.helpers import idle_after, settled, unique

pytestmark = pytest.mark.anyio


def _report(out: str) -> dict[str, object]:
    """What ``follow`` printed with ``as_json``: the agent and its result, alone."""
    found: dict[str, object] = json.loads(out)
    return found


async def test_a_one_shot_agent_is_followed_to_its_end(
    deck: Deck, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = await deck.create_agent(
        AgentSpec(prompt="Hello! Who are you?", name=unique("run"), scenario="chat"),
        keep_alive=False,
    )
    code = await steer.follow(deck, agent.id, after=0, as_json=True, until_turn=False)
    assert code == 0
    shown = _report(capsys.readouterr().out)
    assert shown["agent"]["state"] == "done"  # type: ignore[index]
    assert shown["result"]["is_error"] is False  # type: ignore[index]


async def test_send_follows_the_answering_turn_until_the_agent_settles(
    deck: Deck, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = await deck.create_agent(AgentSpec(prompt="hello", name=unique("send"), scenario="chat"))
    found = await settled(deck, agent.id, idle_after(1))
    mark = await deck.last_event_id()
    running = await steer.turn_running(deck, found, mark)
    assert running is False  # idle: nothing asked and unanswered
    await deck.send(agent.id, "and again")
    code = await steer.follow(
        deck, agent.id, after=mark, as_json=True, until_turn=True, answer=AnswerTo(running)
    )
    assert code == 0
    shown = _report(capsys.readouterr().out)
    assert shown["agent"]["state"] == AgentState.IDLE.value  # type: ignore[index]
    assert shown["agent"]["turns"] >= 2  # type: ignore[index,operator]


async def test_following_an_unknown_agent_is_not_found(deck: Deck) -> None:
    with pytest.raises(NotFound):
        await steer.follow(deck, "no-such-agent", after=0, as_json=True, until_turn=False)
