"""The Deck interface's templates with every key of Claude Code's agent files, the
same on both implementations (``conftest``: the daemon's Deck in this process,
``RemoteDeck`` over a real daemon's API): the whole definition comes back as the
same record, and a template that would give more than its profile is the same
error, naming the key, either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent_file import Hook, McpServer
from agentdeck.core.deck import Deck
from agentdeck.errors import TemplateError

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FULL = """---
name: full
description: Every key.
tools: Read, Grep, Skill, mcp__notes
disallowedTools: WebFetch
model: haiku
permissionMode: plan
maxTurns: 4
skills: [review]
mcpServers:
  - notes: {command: npx, args: [notes], env: {NOTES_TOKEN: "${NOTES_TOKEN}"}}
hooks:
  Stop: [{hooks: [{type: command, command: pwd}]}]
memory: local
background: true
effort: low
initialPrompt: First this.
color: green
---
FULL prompt.
"""
LOOSE = """---
name: loose
description: Skips the policy.
permissionMode: bypassPermissions
---
Loose.
"""


def project_with(tmp_path: Path, **files: str) -> Path:
    agents = tmp_path / "project" / ".claude" / "agents"
    agents.mkdir(parents=True)
    for name, text in files.items():
        (agents / f"{name}.md").write_text(text)
    return agents.parent.parent


async def test_a_template_with_every_key_comes_back_whole(deck: Deck, tmp_path: Path) -> None:
    project = project_with(tmp_path, full=FULL)
    one = await deck.template("full", str(project))
    assert one.claude.permission_mode == "plan" and one.claude.effort == "low"
    assert one.claude.mcp_servers == (
        McpServer(
            "notes", {"command": "npx", "args": ["notes"], "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}}
        ),
    )
    assert one.claude.hooks == (Hook("Stop", "pwd"),)
    assert (one.claude.skills, one.claude.memory, one.claude.background) == (
        ("review",),
        "local",
        True,
    )
    assert (one.claude.initial_prompt, one.color, one.model, one.max_turns) == (
        "First this.",
        "green",
        "haiku",
        4,
    )
    listed = await deck.templates(str(project))
    assert one == next(t for t in listed.templates if t.name == "full")


async def test_a_template_looser_than_its_profile_is_refused_naming_the_key(
    deck: Deck, tmp_path: Path
) -> None:
    project = project_with(tmp_path, loose=LOOSE)
    with pytest.raises(TemplateError) as raised:
        await deck.template("loose", str(project))
    assert "loose.md: permissionMode: bypassPermissions would let Claude Code approve" in str(
        raised.value
    )
