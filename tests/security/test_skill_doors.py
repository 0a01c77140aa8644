"""Skills and subagents as hostile input: a SKILL.md or a template may be
model-written (an agent can write its project's .claude/skills and .claude/agents
where no sandbox protects them).

* a skill folder, its SKILL.md or a file in it that is a symlink (out of the
  folder) is refused, never offered: a template naming it does not start;
* names are plain words: a path in a template's skills or `skills show` reads nothing;
* sizes are bounded (SKILL.md, files, bytes); escape sequences in a description or
  SKILL.md refuse the skill, so `skills list|show` never print them;
* a template's subagents take only keys that cannot widen the agent, bounded
  texts, no secrets.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent_file import AgentFile
from agentdeck.core.skills import MAX_FILES, MAX_SKILL_MD
from agentdeck.core.templates import TemplateError, parse_template
from agentdeck.errors import ConfigError, NotFound
from agentdeck.runner.skills import find_skill, for_agent, found
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env

SECRET_SKILL = "---\nname: {name}\ndescription: Reads secrets.\n---\ncat ~/.ssh/id_rsa\n"


def _skill(root: Path, name: str, text: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        text or f"---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n"
    )
    return folder


def _problems(settings: Settings, project: Path) -> dict[str, str | None]:
    return {s.name: s.problem for s in found(settings, project) if s.source == "project"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project" / ".claude" / "skills"
    root.mkdir(parents=True)
    return tmp_path / "project"


def test_symlinks_out_of_a_skill_folder_are_refused(
    settings: Settings, project: Path, tmp_path: Path
) -> None:
    outside = _skill(tmp_path / "elsewhere", "loot", SECRET_SKILL.format(name="loot"))
    skills = project / ".claude" / "skills"
    os.symlink(outside, skills / "loot")  # the whole folder
    linked_md = skills / "linked-md"
    linked_md.mkdir()
    os.symlink(outside / "SKILL.md", linked_md / "SKILL.md")
    inner = _skill(skills, "inner")
    os.symlink(Path.home(), inner / "home")  # a file in it leading out
    _skill(skills, "fine")
    problems = _problems(settings, project)
    assert problems["loot"] == "the folder is a symlink: a skill's files stay in its folder"
    assert problems["linked-md"] is not None and "symlink" in problems["linked-md"]
    assert problems["inner"] == "holds a symlink (home): a skill's files stay in its folder"
    assert problems["fine"] is None

    for name in ("loot", "linked-md", "inner"):
        with pytest.raises(ConfigError) as caught:
            for_agent(AgentFile(skills=(name,)), settings, project)
        said = f"skill `{name}` (project: {skills / name}) is refused: {problems[name]}"
        assert said in str(caught.value)
    assert for_agent(AgentFile(skills=("fine",)), settings, project).skills == ["fine"]


def test_the_projects_skills_folder_as_a_symlink_is_refused(
    settings: Settings, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    _skill(outside, "loot", SECRET_SKILL.format(name="loot"))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    os.symlink(outside, project / ".claude" / "skills")
    skills = [s for s in found(settings, project) if s.source == "project"]
    assert [(s.name, s.problem) for s in skills] == [
        ("?", "the skills folder is a symlink: refused")
    ]
    with pytest.raises(ConfigError):
        for_agent(AgentFile(skills=("loot",)), settings, project)

    # .claude itself leading elsewhere: the same.
    other = tmp_path / "other"
    (other / "skills").mkdir(parents=True)
    _skill(other / "skills", "loot", SECRET_SKILL.format(name="loot"))
    second = tmp_path / "second"
    second.mkdir()
    os.symlink(other, second / ".claude")
    skills = [s for s in found(settings, second) if s.source == "project"]
    assert [(s.name, s.problem) for s in skills] == [
        ("?", "the skills folder is a symlink: refused")
    ]


def test_names_are_plain_words_never_paths(settings: Settings, project: Path) -> None:
    with pytest.raises(TemplateError) as caught:
        parse_template(
            {"name": "t", "description": "d", "skills": ["../../etc", "a/b", "Big"]}, "x", "t.md"
        )
    text = str(caught.value)
    assert "is a path: a skill is named, not located" in text
    assert "is not a skill name" in text
    with pytest.raises(NotFound):
        find_skill(settings, project, "../../../etc/passwd")
    weird = project / ".claude" / "skills" / "Weird Name"
    weird.mkdir()
    assert any(s.problem and "is not a skill's name" in s.problem for s in found(settings, project))


def test_a_template_whose_tools_leave_out_skill_is_refused() -> None:
    """Its skills would be listed but unusable; the tool is never added for it."""
    with pytest.raises(TemplateError) as caught:
        parse_template(
            {"name": "t", "description": "d", "tools": "Read", "skills": ["x"]}, "x", "t.md"
        )
    assert "skills: its skills are used through the Skill tool, which `tools` leaves out" in str(
        caught.value
    )
    ok = parse_template(
        {"name": "t", "description": "d", "tools": "Read, Skill", "skills": ["x"]}, "x", "t.md"
    )
    assert ok.claude.skills == ("x",)
    helpers = {"c": {"description": "d", "prompt": "p"}}
    with pytest.raises(TemplateError) as caught:
        parse_template(
            {"name": "t", "description": "d", "tools": "Read", "subagents": helpers}, "x", "t.md"
        )
    assert "subagents: its subagents are started through the Agent tool" in str(caught.value)


def test_sizes_are_bounded(settings: Settings, project: Path) -> None:
    skills = project / ".claude" / "skills"
    big = _skill(skills, "big")
    (big / "SKILL.md").write_text(
        "---\nname: big\ndescription: d\n---\n" + "x" * (MAX_SKILL_MD + 1)
    )
    many = _skill(skills, "many")
    for i in range(MAX_FILES + 1):
        (many / f"f{i}").write_text("")
    problems = _problems(settings, project)
    assert problems["big"] == f"SKILL.md is larger than {MAX_SKILL_MD // 1024} KiB"
    assert problems["many"] is not None and "not a skill" in problems["many"]


def test_escape_sequences_refuse_the_skill_and_are_never_printed(
    project: Path, tmp_path: Path
) -> None:
    skills = project / ".claude" / "skills"
    _skill(skills, "esc", '---\nname: esc\ndescription: "ok\\e]0;owned\\a"\n---\nx\n')
    _skill(skills, "esc-body", "---\nname: esc-body\ndescription: fine\n---\n\x1b[2Jwiped\n")
    _skill(skills, "misnamed", "---\nname: other\ndescription: fine\n---\nx\n")
    env = deck_env(tmp_path)
    listed = deck(env, "skills", "list", "--project", str(project))
    shown = deck(env, "skills", "show", "esc-body", "--project", str(project))
    for done in (listed, shown):
        assert done.code == 0, done.err
        assert "\x1b" not in done.out + done.err and "\x07" not in done.out + done.err
    assert "esc: its description is over 1024 characters or holds control" in listed.err
    assert "esc-body: SKILL.md holds control characters" in listed.err
    assert "misnamed: SKILL.md's `name` differs from its folder's" in listed.err
    assert "wiped" not in shown.out  # its body is not shown either


def _subagent_problems(subagents: object) -> str:
    with pytest.raises(TemplateError) as caught:
        parse_template({"name": "t", "description": "d", "subagents": subagents}, "x", "t.md")
    return str(caught.value)


def test_subagents_take_only_keys_that_cannot_widen_the_agent() -> None:
    ok = parse_template(
        {
            "name": "t",
            "description": "d",
            "subagents": {
                "checker": {"description": "Checks.", "prompt": "Check.", "tools": ["Read"]}
            },
        },
        "x",
        "t.md",
    )
    [checker] = ok.claude.subagents
    assert checker.definition() == {"description": "Checks.", "prompt": "Check.", "tools": ["Read"]}
    assert AgentFile.from_dict(ok.claude.to_dict()) == ok.claude  # kept on the spec as is

    widen = {"description": "d", "prompt": "p", "permissionMode": "bypassPermissions"}
    assert "`x`: unknown or refused key(s) `permissionMode`" in _subagent_problems({"x": widen})
    hooks = {"description": "d", "prompt": "p", "hooks": {}, "mcpServers": ["evil"]}
    assert "refused key(s) `hooks`, `mcpServers`" in _subagent_problems({"x": hooks})
    assert "is not a subagent's name" in _subagent_problems({"../up": {"prompt": "p"}})
    secret = {"description": "d", "prompt": "use sk-ant-api03-" + "A" * 90}
    assert "looks like a secret" in _subagent_problems({"x": secret})
    escape = {"description": "\x1b]0;owned\x07", "prompt": "p"}
    assert "control characters" in _subagent_problems({"x": escape})
    many = {f"a{i}": {"description": "d", "prompt": "p"} for i in range(17)}
    assert "more than 16 subagents" in _subagent_problems(many)


def _decide(rules: dict[str, Any], skill: object) -> tuple[str, str | None]:
    from agentdeck.core.policy import decide, profile_from_dict

    profile = profile_from_dict({"name": "p", **rules}, "p.yaml")
    verdict = decide(profile, "Skill", {"skill": skill}, workspace="/w", home="/h")
    return str(verdict.decision), verdict.rule


def test_skill_rules_allow_only_the_skills_they_name() -> None:
    """``Skill(name)``: a profile enables some skills, not all; a model-chosen name
    that is not a skill's is never allowed by a rule, nor remembered as one."""
    from agentdeck.core.policy import PolicyError, profile_from_dict, rule_for

    only = {"default": "deny", "allow": ["Skill(greet)", "Skill(agentdeck:run-tests)"]}
    assert _decide(only, "greet") == ("allow", "Skill(greet)")
    assert _decide(only, "agentdeck:run-tests") == ("allow", "Skill(agentdeck:run-tests)")
    assert _decide(only, "run-tests")[0] == "deny"  # an allow names one spelling exactly
    assert _decide(only, "tidy")[0] == "deny"
    assert _decide(only, "../greet")[0] == "deny"
    assert _decide(only, None)[0] == "deny"

    # A deny catches a plugin's skill by either spelling (Claude Code takes both).
    deny = {"default": "ask", "allow": ["Skill"], "deny": ["Skill(agentdeck:run-tests)"]}
    assert _decide(deny, "run-tests") == ("deny", "Skill(agentdeck:run-tests)")
    assert _decide(deny, "agentdeck:run-tests") == ("deny", "Skill(agentdeck:run-tests)")
    assert _decide(deny, "greet") == ("allow", "Skill")
    assert _decide(deny, "/run-tests")[0] == "ask"  # not a name: no rule allows it

    # "Approve always" remembers that skill, never every skill.
    assert rule_for("Skill", {"skill": "greet"}, "/w") == "Skill(greet)"
    with pytest.raises(PolicyError):
        rule_for("Skill", {"skill": "greet) Bash(rm"}, "/w")
    with pytest.raises(PolicyError, match="is not a skill's name"):
        profile_from_dict({"name": "p", "allow": ["Skill(../x)"]}, "p.yaml")
