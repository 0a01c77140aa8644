"""The Deck's policy what-if (``policy_replay``), the same through both decks: a
real scripted run's calls re-decided under a candidate, the same record, the same
errors; hostile inputs in the log come back cut short and escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.core.policy_replay import PolicyReplay
from agentdeck.errors import NotFound, PolicyError, UsageError
from tests.contract.helpers import idle_after, settled, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

CANDIDATE = """
name: candidate
default: ask
allow: ["Read", "Bash(ls:*)"]
deny: ["Bash(echo:*)"]
"""


def scenario(tmp_path: Path, *commands: str) -> str:
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]} for c in commands
    ]
    turns.append({"reply": [{"text": "Done."}]})
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"name": unique("replayed"), "turns": turns}))
    return str(path)


async def ran(deck: Deck, tmp_path: Path, *commands: str) -> str:
    spec = AgentSpec(
        prompt="go", name=unique("replayed"), scenario=scenario(tmp_path, *commands),
        profile="permissive",
    )  # fmt: skip
    agent = await deck.create_agent(spec)
    await settled(deck, agent.id, idle_after(1))
    return agent.id


async def test_a_runs_calls_replayed_under_a_candidate(deck: Deck, tmp_path: Path) -> None:
    agent_id = await ran(deck, tmp_path, "echo hello", "ls")
    report = await deck.policy_replay(
        "candidate.yaml", profile_text=CANDIDATE, agent=agent_id, since_seconds=3600
    )
    assert isinstance(report, PolicyReplay)
    assert (report.profile, report.agent_id, report.calls, report.unchanged) == (
        "candidate", agent_id, 2, 1,
    )  # fmt: skip
    (group,) = report.groups
    assert (group.change, group.rule, group.count) == ("allow→deny", "Bash(echo:*)", 1)
    (example,) = group.examples
    assert (example.agent_id, example.tool, example.profile) == (agent_id, "Bash", "permissive")
    assert '"echo hello"' in example.input
    assert PolicyReplay.from_dict(report.to_dict()) == report

    built_in = await deck.policy_replay("strict", agent=agent_id)
    assert built_in.profile == "strict" and built_in.calls == 2
    assert {g.change for g in built_in.groups} <= {"allow→deny", "allow→ask"}
    loose = await deck.policy_replay("permissive", agent=agent_id)
    assert (loose.changed, loose.unchanged) == (0, 2)


async def test_bad_requests_are_the_same_errors(deck: Deck, tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such profile"):
        await deck.policy_replay("no-such-profile")
    secret = tmp_path / "mine.yaml"
    secret.write_text("name: mine\ndefault: allow\n")
    with pytest.raises(PolicyError, match="send the file"):  # the deck reads no file
        await deck.policy_replay(str(secret))
    with pytest.raises(PolicyError, match="invalid YAML"):
        await deck.policy_replay("bad.yaml", profile_text="allow: [unclosed")
    with pytest.raises(NotFound):
        await deck.policy_replay("strict", agent=unique("nobody"))
    with pytest.raises(UsageError):
        await deck.policy_replay("strict", agent="a", project="/tmp")
    with pytest.raises(UsageError):
        await deck.policy_replay("strict", project="relative/dir")
    with pytest.raises(UsageError):
        await deck.policy_replay("strict", since_seconds=-5)
    with pytest.raises(UsageError):
        await deck.policy_replay("big.yaml", profile_text="#" * (300 * 1024))


async def test_hostile_inputs_come_back_as_data(deck: Deck, tmp_path: Path) -> None:
    hostile = "echo " + "B" * 5000 + " \x1b]0;pwned\x07 \u202e<script>alert(1)</script>"
    agent_id = await ran(deck, tmp_path, hostile)
    report = await deck.policy_replay("candidate.yaml", profile_text=CANDIDATE, agent=agent_id)
    (group,) = report.groups
    (example,) = group.examples
    assert example.input.endswith("…") and len(example.input) <= 241
    assert "\x1b" not in example.input and "\u202e" not in example.reason
