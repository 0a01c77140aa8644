"""``agentdeck skills list|show`` as a user meets them (a real subprocess): the
user's, the project's and the built-in skills, by the names a template uses; a
name both the user and the project have is the user's (Claude Code launches the
user's then); broken folders said on stderr, never offered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env


def _skill(root: Path, name: str, description: str, *extra: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n"
    )
    for file in extra:
        (folder / file).parent.mkdir(parents=True, exist_ok=True)
        (folder / file).write_text("echo hi\n")
    return folder


@pytest.fixture
def places(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env = deck_env(tmp_path)
    project = tmp_path / "project"
    mine = project / ".claude" / "skills"
    users = tmp_path / "claude-config" / "skills"  # AGENTDECK_CLAUDE_CONFIG_DIR's
    _skill(mine, "greet", "Greet the project's way.", "scripts/hi.sh")
    _skill(mine, "both", "The project's both.")
    _skill(users, "both", "The user's both.")
    _skill(users, "tidy", "Tidy up.")
    (mine / "broken").mkdir()
    return env, project


def test_list_names_every_skill_and_where_it_comes_from(
    places: tuple[dict[str, str], Path],
) -> None:
    env, project = places
    done = deck(env, "skills", "list", "--project", str(project))
    assert done.code == 0, done.err
    rows = {line.split()[0]: line.split()[1:3] for line in done.out.splitlines()[1:] if line}
    assert rows == {
        "both": ["user", "1"],
        "tidy": ["user", "1"],
        "greet": ["project", "2"],
        "agentdeck:run-tests": ["built-in", "2"],
        "agentdeck:status-report": ["built-in", "1"],
    }, done.out
    assert f"shadowed: project {project}/.claude/skills/both" in done.err
    assert f"invalid, not offered: {project}/.claude/skills/broken: no SKILL.md" in done.err

    data = deck(env, "skills", "list", "--project", str(project), "--json").json()
    by_name = {s["qualified"]: s for s in data["skills"]}
    assert by_name["both"]["description"] == "The user's both."
    assert by_name["greet"]["files"] == ["SKILL.md", "scripts/hi.sh"]
    assert [s["source"] for s in data["shadowed"]] == ["project"]
    assert [(s["name"], s["problem"]) for s in data["invalid"]] == [("broken", "no SKILL.md")]


def test_show_prints_one_skill_and_its_instructions(places: tuple[dict[str, str], Path]) -> None:
    env, project = places
    done = deck(env, "skills", "show", "greet", "--project", str(project))
    assert done.code == 0, done.err
    assert "greet" in done.out and "Greet the project's way." in done.out
    assert "SKILL.md, scripts/hi.sh" in done.out and done.out.rstrip().endswith("Do greet.")

    # A built-in by its plain name or Claude Code's, the same skill.
    plain = deck(env, "skills", "show", "run-tests", "--project", str(project), "--json").json()
    qualified = deck(env, "skills", "show", "agentdeck:run-tests", "--json").json()
    assert plain == qualified and plain["source"] == "built-in"
    assert plain["files"] == ["SKILL.md", "scripts/detect.sh"] and "detect.sh" in plain["body"]

    broken = deck(env, "skills", "show", "broken", "--project", str(project))
    assert broken.code == 0 and "no SKILL.md (never offered)" in broken.out

    missing = deck(env, "skills", "show", "nope", "--project", str(project))
    assert missing.code == 1
    assert "no skill with id 'nope'" in missing.err and "skills here:" in missing.err


def test_agents_show_says_where_each_skill_is_found_and_its_subagents(
    places: tuple[dict[str, str], Path],
) -> None:
    env, project = places
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "greeter.md").write_text(
        "---\nname: greeter\ndescription: Greets.\nskills: [greet, both, run-tests, nope]\n"
        "subagents:\n  checker: {description: Checks., prompt: Check.}\n---\nGreet.\n"
    )
    done = deck(env, "agents", "show", "greeter", "--project", str(project), "--json")
    assert done.code == 0, done.err
    rows = done.json()["resolved"]
    assert rows["skills"]["value"] == ["greet", "both", "run-tests", "nope"]
    said = rows["skills"]["from"]
    assert said.startswith("template; greet: project; both: user; agentdeck:run-tests: built-in")
    assert said.endswith(
        "skill `nope` is found nowhere (the user's skills, the project's "
        ".claude/skills, agentdeck's built-ins): it would not start"
    )
    assert rows["subagents"] == {"value": ["checker"], "from": "template"}
    assert done.json()["claude"]["subagents"][0]["prompt"] == "Check."


def test_a_projects_skills_are_found_up_to_its_repositorys_root(tmp_path: Path) -> None:
    """As Claude Code finds them: ``.claude/skills`` in the directory and each
    parent up to the git repository's root, the nearest first; none above it."""
    env = deck_env(tmp_path)
    repo = tmp_path / "outer" / "repo"
    (repo / ".git").mkdir(parents=True)
    deeper = repo / "pkg" / "sub"
    deeper.mkdir(parents=True)
    _skill(repo / ".claude" / "skills", "rooted", "At the root.")
    _skill(repo / ".claude" / "skills", "twice", "The root's twice.")
    _skill(repo / "pkg" / ".claude" / "skills", "twice", "The package's twice.")
    _skill(tmp_path / "outer" / ".claude" / "skills", "above", "Above the repository.")
    data = deck(env, "skills", "list", "--project", str(deeper), "--json").json()
    mine = {s["name"]: s["description"] for s in data["skills"] if s["source"] == "project"}
    assert mine == {"rooted": "At the root.", "twice": "The package's twice."}, data
    assert [s["path"] for s in data["shadowed"]] == [str(repo / ".claude" / "skills" / "twice")]
