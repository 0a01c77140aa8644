"""``Agent.to_dict`` / ``Agent.from_dict``: the record the API sends and the store
keeps comes back whole, and a sparse one (an older client's) gets the defaults."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState

text = st.text(max_size=20)
maybe_text = st.none() | text
count = st.integers(min_value=0, max_value=10**9)
seconds = st.floats(min_value=0, max_value=2e9, allow_nan=False)

agents = st.builds(
    Agent,
    id=text,
    name=text,
    state=st.sampled_from(AgentState),
    spec=st.builds(AgentSpec, prompt=text, name=maybe_text, model=maybe_text, owner=maybe_text),
    cwd=text,
    created_at=seconds,
    updated_at=seconds,
    source=st.sampled_from(AgentSource),
    session_id=maybe_text,
    cost_usd=seconds,
    input_tokens=count,
    output_tokens=count,
    turns=count,
    current_tool=maybe_text,
    last_error=maybe_text,
    pid=st.none() | count,
    owner_pid=st.none() | count,
    parent_id=maybe_text,
    extra=st.dictionaries(text, st.none() | st.booleans() | count | text, max_size=3),
)


@given(agents)
def test_an_agent_comes_back_whole_from_its_dict_and_its_json(agent: Agent) -> None:
    assert Agent.from_dict(agent.to_dict()) == agent
    assert Agent.from_dict(json.loads(json.dumps(agent.to_dict()))) == agent


def test_a_sparse_record_gets_the_defaults() -> None:
    agent = Agent.from_dict({"id": "a1", "name": "n", "state": "running", "extra": None})
    bare = Agent("a1", "n", AgentState.RUNNING, AgentSpec(prompt=""), "", 0.0, 0.0)
    assert agent == bare
    assert agent.source is AgentSource.AGENTDECK and agent.extra == {}
