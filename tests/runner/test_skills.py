"""Skills on the real Claude Code CLI with the scripted model.

* a template's ``skills: [greet, agentdeck:status-report]`` — the project's skill and
  an agentdeck built-in (a plugin folder Claude Code is given): the model is told
  of exactly those, the scripted turn that uses ``greet`` through the Skill tool
  gets its SKILL.md, and the script the skill names runs as the agent's Bash call;
* a profile rule that denies the skill's script denies it (never run, audited);
* a template's ``subagents:`` reach Claude Code as agents its Agent tool can start;
* a skill found nowhere refuses the start, naming it; nothing runs.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.core.templates import apply_template
from agentdeck.errors import AgentProcessError
from agentdeck.orchestration.templates import resolve
from agentdeck.runner.runner import Runner
from agentdeck.runner.skills import BUILTIN_DIR
from agentdeck.sandbox.support import _probe_bwrap
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio]

TEMPLATE = """---
name: greeter
description: Greets with a skill.
tools: Bash, Skill, Agent
skills: [greet, agentdeck:status-report]
subagents:
  checker:
    description: Checks the greeting and changes nothing.
    prompt: You check greetings.
    tools: [Read]
    skills: [run-tests]
---
Greet the user.
"""
SKILL = """---
name: greet
description: Greet the user the project's way.
---
GREET-SKILL-BODY: run `sh {script}` and repeat what it prints.
"""


def _project(
    tmp_path: Path, *, deny_script: bool = False, allow_skill: bool = True
) -> tuple[Path, str, str, Path]:
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "greeter.md").write_text(TEMPLATE)
    folder = project / ".claude" / "skills" / "greet"
    (folder / "scripts").mkdir(parents=True)
    marker = tmp_path / "greeted"
    script = folder / "scripts" / "hi.sh"
    script.write_text(f"echo hello-from-the-skill\ntouch {marker}\n")
    (folder / "SKILL.md").write_text(SKILL.format(script=script))
    rules: dict[str, Any] = {
        "name": "skills-test",
        "default": "deny",
        "allow": ["Skill", "Bash(sh *)"] if allow_skill else ["Bash(sh *)"],
    }
    if deny_script:
        rules["deny"] = [f"Bash(sh {script})"]
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump(rules))
    turns = [
        {"reply": [{"tool_use": {"name": "Skill", "input": {"skill": "greet"}}}]},
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": f"sh {script}"}}}]},
        {"reply": [{"text": "Greeted."}]},
    ]
    scenario = tmp_path / "script.yaml"
    scenario.write_text(yaml.safe_dump({"name": "skills", "turns": turns}))
    return project, str(profile), str(scenario), marker


def _requests(runner: Runner) -> list[dict[str, Any]]:
    return [
        dict(r.body)
        for model in runner.scripted_models().values()
        for r in model.requests
        if r.path.endswith("/messages") and isinstance(r.body, dict)
    ]


async def _run(
    store: Store, runner: Runner, settings: Settings, project: Path, profile: str, scenario: str
) -> tuple[str, list[Any]]:
    template = resolve(settings, "greeter", project, profile=profile)
    spec = apply_template(
        template, AgentSpec(prompt="greet", scenario=scenario, profile=profile, cwd=str(project))
    )
    session = await runner.start(spec)
    await session.wait_finished(timeout=120)
    agent_id = session.agent.id
    return agent_id, await store.read(agent_id=agent_id, limit=100_000)


def _listing(request: dict[str, Any]) -> str:
    """The skills Claude Code tells the model of (its Skill tool's listing)."""
    sent = json.dumps(request)
    head = "The following skills are available for use with the Skill tool:"
    assert head in sent, sent[:2000]
    return sent.split(head, 1)[1].split("\\n\\n", 2)[1]


@pytest.mark.cli
async def test_a_templates_skill_is_offered_used_and_its_script_runs(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    project, profile, scenario, marker = _project(tmp_path)
    agent_id, events = await _run(store, runner, settings, project, profile, scenario)
    agent = await store.get_agent(agent_id)
    assert agent.state is AgentState.DONE, agent
    first, *later = _requests(runner)

    # Exactly the template's skills are listed: the project's and the built-in one
    # (Claude Code's own, e.g. deep-research, are hidden).
    listing = _listing(first)
    assert "- greet: Greet the user the project's way." in listing, listing
    assert "- agentdeck:status-report: End a worker's task" in listing, listing
    assert listing.count("\\n- ") == 1, listing  # two entries
    # Its tools: the ones it names (Skill and Agent: what its skills and subagents need).
    tools = {t["name"] for t in first["tools"]} - {"DeferredToolPlaceholder"}
    assert tools == {"Bash", "Skill", "Agent"}, tools
    # Its subagent is one the Agent tool can start.
    assert "- checker: Checks the greeting and changes nothing. (Tools: Read)" in json.dumps(first)

    # The Skill tool launched it; the model got its SKILL.md; the script ran as a Bash call.
    returned = [str(e.data["output"]) for e in events if e.type == EventType.TOOL_RETURNED]
    assert returned[:2] == ["Launching skill: greet", "hello-from-the-skill"], returned
    assert any("GREET-SKILL-BODY" in json.dumps(r["messages"]) for r in later)
    assert marker.exists()
    trail = [(a.tool, str(a.decision)) for a in await store.read_audit()]
    assert ("Skill", "allow") in trail and ("Bash", "allow") in trail, trail
    assert agent.spec.claude.skills == ("greet", "agentdeck:status-report")


@pytest.mark.cli
async def test_a_profile_rule_denies_the_skills_script(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    """The script is the agent's own Bash call: the profile's deny rule stops it."""
    store, runner = deck
    project, profile, scenario, marker = _project(tmp_path, deny_script=True)
    _, events = await _run(store, runner, settings, project, profile, scenario)
    assert not marker.exists()
    resolved = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    denied = [r for r in resolved if r["decision"] == "deny"]
    assert [r.get("rule") for r in denied] == [
        f"Bash(sh {project}/.claude/skills/greet/scripts/hi.sh)"
    ], resolved
    trail = [(a.tool, str(a.decision)) for a in await store.read_audit()]
    assert ("Skill", "allow") in trail and ("Bash", "deny") in trail, trail


@pytest.mark.cli
async def test_the_policy_decides_a_skill_call_before_the_sdks_allow_rule(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    """The SDK turns ``skills`` into ``Skill(NAME)`` allow rules Claude Code would
    apply by itself: the policy's hook still sees the call first, and a profile that
    does not enable the Skill tool denies it; the SKILL.md never reaches the model."""
    store, runner = deck
    project, profile, scenario, _ = _project(tmp_path, allow_skill=False)
    _, events = await _run(store, runner, settings, project, profile, scenario)
    resolved = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    assert resolved and resolved[0]["decision"] == "deny", resolved
    assert "`Skill`" in resolved[0]["reason"], resolved
    assert not any("GREET-SKILL-BODY" in json.dumps(r["messages"]) for r in _requests(runner))
    trail = [(a.tool, str(a.decision)) for a in await store.read_audit()]
    assert ("Skill", "deny") in trail, trail


@pytest.mark.cli
async def test_a_skill_found_nowhere_refuses_the_start(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    project, profile, scenario, marker = _project(tmp_path)
    template = project / ".claude" / "agents" / "greeter.md"
    template.write_text(TEMPLATE.replace("[greet, ", "[nope, greet, "))
    with pytest.raises(AgentProcessError) as caught:
        await _run(store, runner, settings, project, profile, scenario)
    assert "skill `nope` is found nowhere" in str(caught.value)
    assert _requests(runner) == [] and not marker.exists()  # the model was never asked


@pytest.mark.cli
async def test_claude_codes_initialize_answer_and_init_message_list_them(
    settings: Settings, tmp_path: Path
) -> None:
    """The options alone, on the real CLI: its ``initialize`` answer has the skills
    as commands (the built-in under ``agentdeck:``), its init message lists them and
    the template's subagent among its agents. (Claude Code's init lists every skill
    it found; the SDK's ``skills`` filters what the model is told: the first test.)"""
    from claude_agent_sdk import ClaudeSDKClient
    from claude_agent_sdk.types import SystemMessage

    from agentdeck.core.agent_file import AgentFile
    from agentdeck.core.subagents import Subagent
    from agentdeck.runner.options import build_options
    from tests.support.mockmodel import running_mock

    project, _, scenario, _ = _project(tmp_path)
    claude = AgentFile(
        skills=("greet", "status-report"), subagents=(Subagent("checker", "Checks.", "Check."),)
    )
    async with running_mock(scenario) as mm:
        options = build_options(
            AgentSpec(prompt="x", claude=claude),
            settings=settings,
            cwd=project,
            can_use_tool=None,
            stderr=None,
            base_url=mm.url_for("skills"),
        )
        client = ClaudeSDKClient(options)
        await client.connect()
        try:
            info = await client.get_server_info()
            await client.query("hi")
            init = None
            async for message in client.receive_response():
                if isinstance(message, SystemMessage) and message.subtype == "init":
                    init = message.data
        finally:
            await client.disconnect()
    assert info is not None
    commands = {c["name"] for c in info["commands"]}
    assert {"greet", "agentdeck:status-report"} <= commands, commands
    assert init is not None
    assert {"greet", "agentdeck:status-report"} <= set(init["skills"]), init["skills"]
    assert "checker" in init["agents"], init["agents"]
    assert any(p["name"] == "agentdeck" for p in init["plugins"]), init["plugins"]


@pytest.mark.cli
@pytest.mark.skipif(not _probe_bwrap()[0], reason="bubblewrap cannot run here")
async def test_in_a_process_sandbox_skills_scripts_are_confined_with_their_agent(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    """A skill's script is the agent's Bash call: inside the profile's process sandbox
    it runs (the project's and the built-in's, from the package) and writes nothing
    outside the workspace."""
    store, runner = deck
    project, profile, scenario, _ = _project(tmp_path)
    outside = Path.home() / f".agentdeck-skill-escape-{uuid.uuid4().hex}"
    script = project / ".claude" / "skills" / "greet" / "scripts" / "hi.sh"
    script.write_text(
        f"echo hello-from-the-skill\ntouch {outside} 2>/dev/null && echo wrote || echo refused\n"
    )
    (project / "tests").mkdir()
    detect = BUILTIN_DIR / "skills" / "run-tests" / "scripts" / "detect.sh"
    rules = yaml.safe_load(Path(profile).read_text())
    rules["sandbox"] = {"mode": "process", "required": True, "network": {"mode": "off"}}
    Path(profile).write_text(yaml.safe_dump(rules))
    turns = [
        {"reply": [{"tool_use": {"name": "Skill", "input": {"skill": "greet"}}}]},
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": f"sh {script}"}}}]},
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": f"sh {detect} ."}}}]},
        {"reply": [{"text": "Greeted."}]},
    ]
    Path(scenario).write_text(yaml.safe_dump({"name": "skills", "turns": turns}))
    try:
        agent_id, events = await _run(store, runner, settings, project, profile, scenario)
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    returned = [str(e.data["output"]) for e in events if e.type == EventType.TOOL_RETURNED]
    assert returned[:3] == [
        "Launching skill: greet",
        "hello-from-the-skill\nrefused",
        "python -m pytest -q",
    ], returned
    agent = await store.get_agent(agent_id)
    assert agent.extra.get("sandbox") == "process", agent.extra
