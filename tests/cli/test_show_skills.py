"""``agentdeck show`` says which skills an agent was offered (its record's, both
forms: ``--json`` has them as Agent.to_dict's ``skills``)."""

from __future__ import annotations

import json

import pytest

from agentdeck.cli import remote
from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.skills import OFFERED


def record(**extra: object) -> dict[str, object]:
    agent = Agent("a1", "greeter", AgentState.IDLE, AgentSpec(prompt="p"), "/w", 0.0, 0.0)
    return agent.with_changes(extra=dict(extra)).to_dict()


def test_show_lists_the_skills_it_was_offered(capsys: pytest.CaptureFixture[str]) -> None:
    found = record(**{OFFERED: ["greet", "agentdeck:status-report"]})
    assert json.loads(json.dumps(found))["skills"] == ["greet", "agentdeck:status-report"]
    remote.print_show(found, [])
    lines = capsys.readouterr().out.splitlines()
    line = next(x for x in lines if x.strip().startswith("skills"))
    assert line.split(None, 1)[1].strip() == "greet, agentdeck:status-report"


def test_no_skills_no_line(capsys: pytest.CaptureFixture[str]) -> None:
    remote.print_show(record(), [])
    assert not any(x.strip().startswith("skills") for x in capsys.readouterr().out.splitlines())
