"""The skills an agent was offered, on its record the same through either deck:
its template's ``skills`` (a plain name the project's, else the built-in), or
without a list every skill Claude Code found (the project's here); a skill folder
that breaks the rules (a name that is no skill's) is never on the record."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from tests.contract.helpers import idle_after, settled, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TEMPLATE = """---
name: greeter
description: Greets with a skill.
tools: Read, Skill
skills: [greet, status-report]
---
Greet the user.
"""
SKILL = """---
name: {name}
description: Greet the user the project's way.
---
Say hello.
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / unique("project")
    (root / ".git").mkdir(parents=True)  # the project's skills are looked for up to here
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "greeter.md").write_text(TEMPLATE)
    for folder in ("greet", "lint", "Evil\x1b[2J"):
        (root / ".claude" / "skills" / folder).mkdir(parents=True)
        (root / ".claude" / "skills" / folder / "SKILL.md").write_text(SKILL.format(name=folder))
    return root


async def test_the_skills_an_agent_was_offered_are_on_its_record(
    deck: Deck, tmp_path: Path
) -> None:
    root = project(tmp_path)
    spec = AgentSpec(prompt="hello", name=unique("skills"), scenario="chat", cwd=str(root))
    templated = await deck.create_agent(spec, template="greeter")
    plain = await deck.create_agent(replace(spec, name=unique("skills")))
    templated = await settled(deck, templated.id, idle_after(1))
    plain = await settled(deck, plain.id, idle_after(1))
    assert templated.skills == ("greet", "agentdeck:status-report"), templated.extra
    assert {"greet", "lint"} <= set(plain.skills), plain.extra
    assert not any("Evil" in s or "\x1b" in s for s in plain.skills), plain.skills
    assert not any(s.startswith("agentdeck:") for s in plain.skills), plain.skills
    listed = {a.id: a for a in await deck.list_agents(text=str(root))}
    assert listed[templated.id].skills == templated.skills
    for agent in (templated, plain):
        await deck.kill(agent.id)
