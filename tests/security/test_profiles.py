"""Doors 2 and 7: a child's profile, and the deck's own secrets.

Door 2: a hostile orchestrator under a profile that requires a process sandbox
spawns a template that names a looser profile (``permissive``: no sandbox), one
found in the project and one it writes into ``.claude/agents/`` itself first. Each
spawn is refused with the reason, and nothing starts. A child whose template is
stricter on one axis and looser on none runs under the intersection of both
profiles: its own sandbox, and its parent's rules too.

Door 7: agentdeck's token and database, and Claude Code's credentials, are denied
to every tool and to Bash by every profile, with the sandbox off:
``agentdeck policy check`` says so, and a scripted agent that tries is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.orchestration.conftest import Team, make_team
from tests.sandbox.conftest import needs_bwrap
from tests.support import deckcli
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio]

LAX = """---
name: {name}
description: A worker that wants no sandbox.
profile: permissive
---
Do what you are told.
"""
# The orchestrator's own profile: anything goes but out of its sandbox, which it
# must have (so it can write templates into its workspace).
BOXED = {
    "name": "boxed",
    "default": "allow",
    "sandbox": {"mode": "process", "required": True, "network": {"mode": "off"}},
}


# The orchestrator template has no Write: its shell writes the template.
PLANT = (
    "mkdir -p .claude/agents && printf '%s\\n' "
    + " ".join(f"'{line}'" for line in LAX.format(name="planted").splitlines())
    + " > .claude/agents/planted.md"
)


def spawn(name: str, template: str) -> dict[str, Any]:
    return {
        "tool_use": {
            "name": "mcp__deck__spawn_agent",
            "input": {"prompt": f"TASK-{name}", "template": template, "name": name},
        }
    }


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


@pytest.fixture
async def team(settings: Settings, tmp_path: Path) -> AsyncIterator[Team]:
    async with make_team(settings, tmp_path) as made:
        yield made


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".agentdeck").mkdir(parents=True)
    return root


async def outputs(team: Team, agent_id: str) -> list[str]:
    return [str(e.data["output"]) for e in await team.events(agent_id, "tool_returned")]


@needs_bwrap
@pytest.mark.cli
async def test_an_orchestrator_in_a_required_sandbox_cannot_spawn_a_looser_child(
    team: Team, tmp_path: Path
) -> None:
    root = project(tmp_path)
    # One template the user has; one the model tries to write into the project
    # first (its .claude/ is read-only in the sandbox, whether it existed or not).
    users = team.settings.claude_config_dir
    assert users is not None
    (users / "agents").mkdir(parents=True)
    (users / "agents" / "lax.md").write_text(LAX.format(name="lax"))
    boxed = tmp_path / "boxed.yaml"
    boxed.write_text(yaml.safe_dump(BOXED))
    planted = root / ".claude" / "agents" / "planted.md"
    scenario = team.scenario(
        {
            "name": "looser",
            "turns": [
                {"reply": [spawn("wa", "lax")]},
                {"reply": [tool("Bash", command=PLANT, description="plant a template")]},
                {"reply": [spawn("wb", "planted")]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-"},
                    "turns": [{"reply": [{"text": "x"}]}],
                }
            ],
        }
    )
    lead = (await team.lead(scenario, profile=str(boxed), cwd=str(root))).agent
    lead = await team.settled(lead.id)
    assert lead.extra.get("sandbox") == "process"
    # The sandbox keeps the project's .claude/ read-only, made or not: no plant.
    assert not planted.exists()
    refused = await team.tool_results(lead.id, "spawn_agent")
    assert len(refused) == 2
    said = refused[0]
    assert said.startswith("cannot spawn: template lax names profile permissive")
    assert "its sandbox is off, its parent's process" in said
    assert "its parent's sandbox is required" in said
    assert refused[1].startswith("no agent template with id 'planted'")
    assert await team.children(lead.id) == []
    assert [a.id for a in await team.store.list_agents(include_archived=True)] == [lead.id]


@needs_bwrap
@pytest.mark.cli
async def test_a_stricter_child_runs_under_the_intersection(team: Team, tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / ".claude" / "agents").mkdir(parents=True)
    # Stricter than `default` on its network (one domain) and required; looser on
    # nothing (the same budgets and default); a deny rule of its own.
    tight = {
        "name": "tight",
        "default": "ask",
        "allow": ["Read", "Bash(pwd)", "Bash(echo:*)"],
        "deny": ["Bash(curl:*)"],
        "budgets": {"max_turns": 100, "max_consecutive_tool_errors": 8, "max_repeated_calls": 10},
        "sandbox": {
            "mode": "process",
            "required": True,
            "network": {"mode": "allowlist", "allowed_domains": ["pypi.org"]},
        },
    }
    (root / ".agentdeck" / "tight.yaml").write_text(yaml.safe_dump(tight))
    (root / ".claude" / "agents" / "careful.md").write_text(
        "---\nname: careful\ndescription: Careful.\n"
        "profile: .agentdeck/tight.yaml\n---\nBe careful.\n"
    )
    scenario = team.scenario(
        {
            "name": "stricter",
            "turns": [
                {"reply": [spawn("wa", "careful")]},
                {"reply": [tool("mcp__deck__wait_for_agents", agents=["wa"])]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-wa"},
                    "turns": [
                        # Its own profile allows echo; its parent's --deny does not.
                        {"reply": [tool("Bash", command="echo CHILD-RAN", description="x")]},
                        {"reply": [tool("Bash", command="pwd", description="x")]},
                        {"reply": [{"text": "WORKER-DONE"}]},
                    ],
                }
            ],
        }
    )
    lead = (await team.lead(scenario, cwd=str(root), deny=("Bash(echo:*)",))).agent
    await team.settled(lead.id)
    wa = await team.settled((await team.child(lead.id, "wa")).id)
    assert wa.spec.profile == str(root / ".agentdeck" / "tight.yaml")
    assert wa.extra.get("sandbox") == "process"
    effective = await team.runner.governor.inherit(wa)
    assert effective.name == "tight"
    assert effective.sandbox.to_dict() == {
        "mode": "process",
        "required": True,
        "filesystem": {
            "allow_write": ["."],
            "deny_read": list(effective.sandbox.deny_read),
            "deny_write": list(effective.sandbox.deny_write),
        },
        "network": {"mode": "allowlist", "allowed_domains": ["pypi.org"]},
    }
    assert "Read(~/.ssh/**)" not in yaml.safe_dump(tight)
    deny = {r.text for r in effective.deny}
    assert {"Bash(curl:*)", "Read(~/.ssh/**)", "Bash(sudo:*)"} <= deny  # both profiles'
    assert {"Edit(/.git/**)", "Bash(git push:*)"} <= {r.text for r in effective.ask}
    assert {r.text for r in effective.allow} == {
        "Read",
        "Bash(pwd)",
        "Bash(echo:*)",
        "mcp__deck",
        "StructuredOutput",
    }
    denied = [e.data for e in await team.events(wa.id, "permission_resolved")]
    assert [(d["decision"], d["rule"]) for d in denied] == [("deny", "Bash(echo:*)")]
    assert f"(the rules of its parent {lead.name})" in denied[0]["reason"]
    said = await outputs(team, wa.id)
    assert not any("CHILD-RAN" in o and "hook" not in o for o in said)


# -- door 7: the deck's own secrets -------------------------------------------------


def test_policy_check_denies_the_token_the_database_and_the_credentials(
    tmp_path: Path,
) -> None:
    env = deckcli.deck_env(tmp_path)
    home, claude = Path(env["AGENTDECK_HOME"]), Path(env["AGENTDECK_CLAUDE_CONFIG_DIR"])
    calls = [
        f"Read({home}/token)",
        f"Read({home}/agentdeck.db)",
        f"Grep({home})",
        f"Edit({home}/token)",
        f"Bash(cat {home}/token)",
        f"Bash(sqlite3 {home}/agentdeck.db .dump)",
        f"Read({claude}/.credentials.json)",
        f"Bash(cat {claude}/.credentials.json)",
    ]
    for profile in ("permissive", "default", "strict"):
        for call in calls:
            done = deckcli.deck(env, "policy", "check", "--profile", profile, call, "--json")
            assert done.code == 1, (profile, call, done.out, done.err)
            assert done.json()["decision"] == "deny"
    own = tmp_path / "mine.yaml"  # a user's own profile cannot forget them either
    own.write_text(yaml.safe_dump({"name": "mine", "default": "allow", "allow": ["Read", "Bash"]}))
    done = deckcli.deck(env, "policy", "check", "--profile", str(own), f"Read({home}/token)")
    assert done.code == 1 and done.out.startswith("deny:"), done.out


@pytest.mark.cli
async def test_an_unsandboxed_agent_cannot_read_the_token_or_the_database(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    settings.ensure_home()
    token = settings.home_dir / "token"
    token.write_text("TOKEN-SECRET-4242\n")
    token.chmod(0o600)
    home = settings.home_dir
    reads = [
        tool("Read", file_path=str(token)),
        tool("Bash", command=f"cat {token}", description="x"),
        tool("Bash", command=f"cp {home}/agentdeck.db ./copy.db", description="x"),
        tool("Read", file_path=str(home / "payloads" / "other" / "out.txt")),
        tool("Write", file_path=str(home / "hooks.json"), content="{}"),  # run by the hooks
    ]
    scenario = tmp_path / "thief.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "thief",
                "turns": [*({"reply": [r]} for r in reads), {"reply": [{"text": "DONE"}]}],
            }
        )
    )
    session = await runner.start(
        AgentSpec(prompt="steal", scenario=str(scenario), profile="permissive")
    )

    async def finished() -> bool:
        agent = await store.get_agent(session.agent.id)
        return agent.state in (AgentState.DONE, AgentState.ERROR)

    await eventually(finished, timeout=120, what="the thief to finish")
    agent = await store.get_agent(session.agent.id)
    assert agent.extra.get("sandbox") == "off"
    events = await store.read(agent_id=agent.id, limit=10_000)
    resolved = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    assert [d["decision"] for d in resolved] == ["deny"] * len(reads)
    assert all("agentdeck's own files" in d["reason"] for d in resolved)
    said = " ".join(str(e.data) for e in events if e.type == EventType.TOOL_RETURNED)
    assert "TOKEN-SECRET-4242" not in said
    assert not (Path(agent.cwd) / "copy.db").exists()
    assert not (home / "hooks.json").exists()


def test_agents_validate_warns_of_a_template_looser_than_the_default(tmp_path: Path) -> None:
    agents = tmp_path / "project" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "lax.md").write_text(LAX.format(name="lax"))
    done = deckcli.deck(deckcli.deck_env(tmp_path), "agents", "validate", str(agents))
    assert done.code == 0, done.out + done.err
    assert "lax.md: ok (lax)" in done.out
    warning = " ".join(done.err.split())
    assert "warning: profile permissive gives more than the default profile" in warning
    assert "its sandbox is off" in warning
