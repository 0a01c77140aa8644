"""Door 8: file disclosure through loaders.

An API caller names ``/etc/shadow`` (or a planted file holding a secret, or a link
to one in the project's ``.agentdeck/``) as an agent's profile or scenario; a
hostile model writes a template whose ``profile`` is such a path and spawns it.
Each is refused, the answer says what is accepted, and no error ever says what
the file holds. The deck's own user (its token file's holder, the CLI) may still
name any file of theirs: its errors do not quote it either.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.roles import Role
from agentdeck.errors import PolicyError, ScenarioError
from agentdeck.governance.profiles import load_profile
from agentdeck.mockmodel.loader import load_scenario
from agentdeck.settings import Settings
from tests.orchestration.conftest import Team, make_team
from tests.support import deckcli
from tests.web.conftest import RunningDaemon, running_daemon

pytestmark = [pytest.mark.anyio]

SECRET = "SECRET-LINE-7f3a9c"
SHADOW = Path("/etc/shadow")


def shadow_lines() -> list[str]:
    try:
        text = SHADOW.read_text()
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def assert_nothing_of_the_files(said: str) -> None:
    assert SECRET not in said
    for line in shadow_lines():
        assert line not in said
        assert line[:12] not in said, line[:12]


def plant(tmp_path: Path) -> dict[str, Path]:
    """Files holding the secret: outside any project, and a project whose
    ``.agentdeck/`` holds links to them."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.yaml"
    secret.write_text(f"{SECRET}: 1\nname: [{SECRET}\n")
    project = tmp_path / "project"
    (project / ".agentdeck").mkdir(parents=True)
    (project / ".agentdeck" / "linked.yaml").symlink_to(secret)
    (project / ".agentdeck" / "shadow.yaml").symlink_to(SHADOW)
    linked_dir = tmp_path / "linked-project"
    linked_dir.mkdir()
    (linked_dir / ".agentdeck").symlink_to(outside)  # the directory itself a link
    return {"secret": secret, "project": project, "linked_dir": linked_dir}


# -- the API ---------------------------------------------------------------------------


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[RunningDaemon]:
    async with running_daemon(settings) as running:
        yield running


async def token_of(daemon: RunningDaemon, name: str, role: Role) -> str:
    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    await identity.add_user(name, role)
    _, secret = await identity.create_token(name, name="t")
    return secret


async def test_the_api_takes_no_path_from_anyone_but_the_decks_owner(
    served: RunningDaemon, tmp_path: Path
) -> None:
    files = plant(tmp_path)
    project = str(files["project"])
    refused: list[dict[str, Any]] = [
        {"profile": str(SHADOW)},
        {"scenario": str(SHADOW)},
        {"profile": str(files["secret"])},
        {"scenario": str(files["secret"])},
        {"profile": "../outside/secret.yaml", "project": project},
        {"profile": ".agentdeck/../../outside/secret.yaml", "project": project},
        {"profile": ".agentdeck/linked.yaml", "project": project},
        {"scenario": ".agentdeck/linked.yaml", "project": project},
        {"profile": ".agentdeck/shadow.yaml", "project": project},
        {"profile": ".agentdeck/secret.yaml", "project": str(files["linked_dir"])},
    ]
    for role in (Role.OPERATOR, Role.ADMIN):
        token = await token_of(served, f"{role}2", role)
        async with served.client(token=token) as api:
            for extra in refused:
                r = await api.post("/api/agents", json={"prompt": "hi", **extra})
                assert r.status_code == 422, (role, extra, r.text)
                assert_nothing_of_the_files(r.text)
            r = await api.post("/api/agents", json={"prompt": "hi", "profile": str(SHADOW)})
            assert "a built-in's name, or a file in the project's .agentdeck/" in r.text
    assert await served.deck._store.list_agents(include_archived=True) == []


async def test_the_decks_owner_may_name_a_file_and_is_not_shown_it(
    served: RunningDaemon, tmp_path: Path
) -> None:
    files = plant(tmp_path)
    async with served.client() as api:  # the token file's holder: the CLI's user
        for extra in (
            {"profile": str(SHADOW)},
            {"scenario": str(SHADOW)},
            {"profile": str(files["secret"])},
            {"scenario": str(files["secret"])},
        ):
            r = await api.post("/api/agents", json={"prompt": "hi", **extra})
            assert r.status_code == 422, (extra, r.text)
            assert_nothing_of_the_files(r.text)
            name = str(SHADOW) if str(SHADOW) in str(extra.values()) else str(files["secret"])
            assert name in r.json()["error"]["message"]  # the file is named, with its line


# -- templates -------------------------------------------------------------------------


LEAK = "---\nname: {name}\ndescription: A worker.\nprofile: {profile}\n---\nWork.\n"


@pytest.fixture
async def team(settings: Settings, tmp_path: Path) -> AsyncIterator[Team]:
    async with make_team(settings, tmp_path) as made:
        yield made


@pytest.mark.cli
async def test_a_template_naming_a_path_is_refused_at_spawn_and_by_validate(
    team: Team, tmp_path: Path
) -> None:
    files = plant(tmp_path)
    project = files["project"]
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "shadow.md").write_text(LEAK.format(name="shadow", profile=SHADOW))
    (agents / "planted.md").write_text(LEAK.format(name="planted", profile=files["secret"]))
    (agents / "linked.md").write_text(LEAK.format(name="linked", profile=".agentdeck/linked.yaml"))
    names = ("shadow", "planted", "linked")
    scenario = team.scenario(
        {
            "name": "leak",
            "turns": [
                *(
                    {
                        "reply": [
                            {
                                "tool_use": {
                                    "name": "mcp__deck__spawn_agent",
                                    "input": {"prompt": f"TASK-{n}", "template": n, "name": n},
                                }
                            }
                        ]
                    }
                    for n in names
                ),
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
        }
    )
    lead = (await team.lead(scenario, cwd=str(project))).agent
    await team.settled(lead.id)
    said = await team.tool_results(lead.id, "spawn_agent")
    assert len(said) == 3
    for text, name in zip(said, names, strict=True):
        assert f"{name}.md: profile:" in text, text
        assert_nothing_of_the_files(text)
    assert "must be a built-in's name, or a file in the project's .agentdeck/" in said[0]
    assert "is not a regular file (a link is not followed)" in said[2]
    assert await team.children(lead.id) == []

    env = deckcli.deck_env(tmp_path)
    done = deckcli.deck(env, "agents", "validate", str(agents))
    assert done.code == 2, done.out + done.err
    for name in names:
        assert f"{name}.md: profile:" in done.out
    assert "linked.yaml is not a regular file (a link is not followed)" in done.out
    assert_nothing_of_the_files(done.out + done.err)


# -- the loaders themselves --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}: 1\n",
        f"default: {SECRET}\n",
        f"allow: ['{SECRET}(x']\n",
        f"allow: ['Bash({SECRET} | sh)']\n",
        f"enabled_tools: ['Bash({SECRET})']\n",
        f"budgets: {{{SECRET}: 1}}\n",
        f"budgets: {{max_turns: '{SECRET}'}}\n",
        f"sandbox: {{mode: '{SECRET}'}}\n",
        f"sandbox: {{{SECRET}: 1}}\n",
        f"sandbox: {{network: {{allowed_domains: ['{SECRET} x']}}}}\n",
        f"sandbox: {{required: '{SECRET}', mode: process}}\n",
        f"name: [{SECRET}\n",
        f"allow: [{SECRET}\n  - x: '\n",
    ],
)
def test_a_profiles_errors_never_quote_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_profile(str(path))
    assert SECRET not in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}: 1\nturns: []\n",
        f"name: '{SECRET} x'\nturns: [{{reply: [{{text: a}}]}}]\n",
        f"turns: [{SECRET}\n",
        "turns:\n  - reply: [{text: a}]\n    " + SECRET + ": 1\n",
    ],
)
def test_a_scenarios_errors_never_quote_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert SECRET not in str(info.value)


def test_a_project_file_is_a_regular_file_in_a_real_directory(tmp_path: Path) -> None:
    from agentdeck.governance.profiles import in_project

    files = plant(tmp_path)
    (files["project"] / ".agentdeck" / "mine.yaml").write_text(yaml.safe_dump({"name": "mine"}))
    found = in_project(".agentdeck/mine.yaml", files["project"])
    assert found == files["project"].resolve() / ".agentdeck" / "mine.yaml"
    for ref, where in (
        (".agentdeck/linked.yaml", files["project"]),
        (".agentdeck/missing.yaml", files["project"]),
        (".agentdeck/secret.yaml", files["linked_dir"]),
        (".agentdeck/../x.yaml", files["project"]),
        (".agentdeck/sub/x.yaml", files["project"]),
        ("/etc/shadow", files["project"]),
        (".agentdeck/mine.yaml", None),
    ):
        with pytest.raises(ValueError):
            in_project(ref, where)
