"""Agent templates as users meet them: files of the project, the user and the
built-in catalog; `agentdeck agents list / show / validate`; a bad template
refused by `run --agent` and the API with one line per problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.errors import TemplateError
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env
from tests.web.conftest import RunningDaemon

BROKEN = """---
name: Broken_Name
description: does things
tools: Read, Teleport
colour: red
permissionMode: bypassPermissions
---
Do things.
"""


def write(
    path: Path, name: str, body: str = "You review, in the project's way.", **keys: str
) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    front = "\n".join(f"{k}: {v}" for k, v in {"name": name, "description": "x", **keys}.items())
    file = path / f"{name}.md"
    file.write_text(f"---\n{front}\n---\n{body}\n")
    return file


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    agents = root / ".claude" / "agents"
    write(agents, "engineer", "PROJECT-ENGINEER prompt", tools="Read, Edit")
    (agents / "broken.md").write_text(BROKEN)
    write(tmp_path / "claude-config" / "agents", "reviewer", "USER-REVIEWER prompt")
    write(tmp_path / "claude-config" / "agents", "engineer", "USER-ENGINEER prompt")
    return root


def test_the_project_overrides_the_user_who_overrides_the_catalog(
    tmp_path: Path, project: Path
) -> None:
    env = deck_env(tmp_path)
    listed = deck(env, "agents", "list", "--project", str(project), "--json")
    assert listed.code == 0, listed.err
    data = listed.json()
    scopes = {t["name"]: t["scope"] for t in data["templates"]}
    assert scopes == {
        "engineer": "project",
        "reviewer": "user",
        "orchestrator": "built-in",
        "tester": "built-in",
        "researcher": "built-in",
    }
    assert [m.split(": ")[0] for m in data["invalid"]] == [
        str(project / ".claude" / "agents" / "broken.md")
    ]
    shown = deck(env, "agents", "show", "engineer", "--project", str(project))
    assert "PROJECT-ENGINEER prompt" in shown.out and "Read, Edit" in shown.out
    plain = deck(env, "agents", "list", "--project", str(project))
    assert "invalid, not usable:" in plain.err and "Teleport" in plain.err
    catalog = deck(env, "agents", "show", "orchestrator", "--json")
    assert catalog.json()["orchestrator"] is True and "mcp__deck__" in catalog.json()["prompt"]


def test_validate_names_every_problem_on_its_own_line(tmp_path: Path, project: Path) -> None:
    env = deck_env(tmp_path)
    file = project / ".claude" / "agents" / "broken.md"
    done = deck(env, "agents", "validate", str(file))
    assert done.code == 2
    assert done.out.splitlines() == [
        f"{file}: colour: unknown key; did you mean color? (known: name, description, tools, "
        "disallowedTools, model, permissionMode, maxTurns, skills, mcpServers, hooks, memory, "
        "background, effort, isolation, initialPrompt, color, profile, budget_usd, max_turns, "
        "workspace, orchestrator, output_schema, model_endpoint, thinking, subagents, "
        "memory_review, config_dir, record, auto_compact_at)",
        f"{file}: name: not a valid name: lowercase letters, digits and "
        "single hyphens, starting with a letter, at most 64 characters",
        f"{file}: tools: unknown tool `Teleport` (Claude Code's tools, or mcp__server__tool)",
    ]
    yaml_error = project / ".claude" / "agents" / "tabs.md"
    yaml_error.write_text("---\nname: tabs\ndescription: [unclosed\n---\nx\n")
    bad = deck(env, "agents", "validate", str(yaml_error))
    assert bad.code == 2 and bad.out.startswith(f"{yaml_error}: line 4: YAML error:")
    good = deck(env, "agents", "validate", str(project / ".claude" / "agents" / "engineer.md"))
    assert good.code == 0 and good.out.strip().endswith(": ok (engineer)")


def test_run_refuses_a_bad_template_before_starting_anything(tmp_path: Path, project: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "run", "--agent", "broken", "--cwd", str(project), "do it", "--json")
    assert done.code == 2
    assert "Teleport" in done.err and "Traceback" not in done.err
    assert "colour: unknown key; did you mean color?" in done.err
    unknown = deck(env, "run", "--agent", "nobody", "--cwd", str(project), "do it")
    assert unknown.code == 1 and "no agent template with id 'nobody'" in unknown.err
    assert "templates here: broken" not in unknown.err  # the broken one is not usable
    assert deck(env, "ls", "--json").json() == []


@pytest.mark.anyio
async def test_the_api_refuses_a_bad_template_with_every_problem(
    daemon: RunningDaemon, project: Path
) -> None:
    async with daemon.client() as api:
        r = await api.post(
            "/api/agents", json={"prompt": "x", "agent": "broken", "project": str(project)}
        )
        assert r.status_code == 422, r.text
        assert "Teleport" in r.json()["error"]["message"]
        r = await api.post("/api/agents", json={"prompt": "x", "agent": "nobody"})
        assert r.status_code == 404
        listed = await api.get("/api/templates", params={"project": str(project)})
        assert {t["name"] for t in listed.json()["templates"]} >= {"engineer", "reviewer"}
        one = await api.get("/api/templates/engineer", params={"project": str(project)})
        assert one.json()["prompt"] == "PROJECT-ENGINEER prompt"
    assert (await api_json(daemon)) == []


async def api_json(daemon: RunningDaemon) -> list[object]:
    async with daemon.client() as api:
        data = (await api.get("/api/agents")).json()
        return list(data["agents"])


def test_the_users_templates_follow_claude_config_dir(tmp_path: Path) -> None:
    from agentdeck.orchestration.templates import user_agents_dir

    assert (
        user_agents_dir(Settings(claude_config_dir=tmp_path / "cc")) == tmp_path / "cc" / "agents"
    )


def test_a_broken_file_below_a_valid_one_is_out_of_sight(tmp_path: Path) -> None:
    from agentdeck.orchestration.templates import resolve

    settings = Settings(claude_config_dir=tmp_path / "cc")
    project = tmp_path / "p"
    user_dir = tmp_path / "cc" / "agents"
    user_dir.mkdir(parents=True)
    (user_dir / "reviewer.md").write_text(BROKEN.replace("Broken_Name", "reviewer"))
    write(project / ".claude" / "agents", "reviewer", "PROJECT-REVIEWER")
    assert resolve(settings, "reviewer", project).prompt == "PROJECT-REVIEWER"
    # Broken where it would win: its problems, not a silent fall-back.
    (project / ".claude" / "agents" / "tester.md").write_text(
        BROKEN.replace("Broken_Name", "tester")
    )
    with pytest.raises(TemplateError, match="Teleport"):
        resolve(settings, "tester", project)


def test_show_says_what_auto_compact_at_means(tmp_path: Path) -> None:
    """0.8 is a share of the window, 150000 a number of tokens: `show` says which."""
    agents = tmp_path / "project" / ".claude" / "agents"
    write(agents, "sharer", auto_compact_at="0.8")
    write(agents, "counter", auto_compact_at="150000")
    env = deck_env(tmp_path)
    where = str(tmp_path / "project")
    share = deck(env, "agents", "show", "sharer", "--project", where)
    assert share.code == 0, share.err
    assert "80% of the model's context window" in share.out
    tokens = deck(env, "agents", "show", "counter", "--project", where)
    assert "150,000 tokens of context" in tokens.out
    raw = deck(env, "agents", "show", "sharer", "--project", where, "--json").json()
    assert raw["resolved"]["auto_compact_at"]["value"] == 0.8
