"""A spec's output schema through the Deck interface, the same on both
implementations: a built-in one comes back on the agent's spec and its
structured result on its row; a hostile one is the same UsageError either way
and starts nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.deck import Deck
from agentdeck.core.output_schema import BUILTIN
from agentdeck.errors import UsageError
from tests.contract.helpers import settled, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCENARIO = str(Path(__file__).parent.parent / "cli" / "scenarios" / "structured.yaml")
STATUS = {"status": "COMPLETE", "summary": "The scripted task is complete."}


async def test_a_builtin_schema_and_its_result(deck: Deck) -> None:
    spec = AgentSpec(
        prompt="go", name=unique("st"), scenario=SCENARIO, output_schema=BUILTIN["status"]
    )
    agent = await deck.create_agent(spec, keep_alive=False)
    assert agent.spec.output_schema == BUILTIN["status"]
    done = await settled(deck, agent.id, lambda a: a.state.is_final)
    assert done.state == AgentState.DONE
    assert done.extra["structured_result"] == STATUS


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "https://evil.example/s.json"},
        {"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}},
        {"type": "array"},
    ],
)
async def test_a_hostile_schema_is_a_usage_error(deck: Deck, schema: dict[str, object]) -> None:
    name = unique("bad")
    spec = AgentSpec(prompt="go", name=name, scenario=SCENARIO, output_schema=schema)
    with pytest.raises(UsageError) as raised:
        await deck.create_agent(spec, keep_alive=False)
    assert "output" in str(raised.value)
    assert not [a for a in await deck.list_agents() if a.name == name]
