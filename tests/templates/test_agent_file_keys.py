"""Every key of Claude Code's agent files, read from a template with Claude Code's
meaning (``core.agent_file``, ``core.templates``): what each becomes, bad input
for each refused with one line naming the key, a mistyped key answered with the
key it is nearest to, and the template text treated as hostile (sizes, paths in
skill names, secrets)."""

# ruff: noqa: E501 - one line per bad input reads best
from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.agent_file import AgentFile, Hook, McpServer
from agentdeck.core.templates import Template, apply_template, parse_template
from agentdeck.errors import TemplateError

FULL: dict[str, Any] = {
    "name": "full",
    "description": "Every key.",
    "tools": "Read, Grep, Bash, Skill, mcp__github, mcp__notes__search",
    "disallowedTools": ["WebFetch"],
    "model": "sonnet",
    "permissionMode": "plan",
    "maxTurns": 7,
    "skills": ["pdf-forms", "tools:review"],
    "mcpServers": [
        "github",
        {"notes": {"command": "npx", "args": ["notes"], "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}}},
    ],
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "pwd", "timeout": 5}]}
        ]
    },
    "memory": "project",
    "background": True,
    "effort": "high",
    "isolation": "worktree",
    "initialPrompt": "Read the README first.",
    "color": "blue",
    "profile": "strict",
    "budget_usd": 1,
    "orchestrator": False,
}


def problems(data: dict[str, Any], body: str = "You review.") -> list[str]:
    with pytest.raises(TemplateError) as caught:
        parse_template(data, body, "x/full.md")
    return [str(p) for p in caught.value.problems]


def test_every_key_is_read_with_claude_codes_meaning() -> None:
    t = parse_template(FULL, "You review.", "x/full.md", stem="full")
    assert (t.tools, t.disallowed_tools, t.model, t.max_turns, t.workspace, t.color) == (
        ("Read", "Grep", "Bash", "Skill", "mcp__github", "mcp__notes__search"),
        ("WebFetch",),
        "sonnet",
        7,
        "worktree",  # isolation: worktree is agentdeck's worktree workspace
        "blue",
    )
    assert t.claude == AgentFile(
        permission_mode="plan",
        effort="high",
        skills=("pdf-forms", "tools:review"),
        memory="project",
        mcp_servers=(
            McpServer("github"),
            McpServer(
                "notes",
                {"command": "npx", "args": ["notes"], "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}},
            ),
        ),
        hooks=(Hook("PreToolUse", "pwd", "Bash", 5),),
        initial_prompt="Read the README first.",
        background=True,
    )
    # A client's copy (RemoteDeck) and a stored spec carry all of it.
    assert Template.from_dict(t.to_dict()) == t
    spec = apply_template(t, AgentSpec(prompt="the task"))
    assert spec.claude == t.claude and AgentSpec.from_dict(spec.to_dict()) == spec
    assert spec.prompt == "Read the README first.\n\nthe task"  # before the task, as Claude Code
    assert apply_template(t, AgentSpec(prompt="")).prompt == "Read the README first."
    assert "claude" not in AgentSpec(prompt="x").to_dict()  # old records read as they were
    assert t.claude.hook_settings() == {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "pwd", "timeout": 5}]}
            ]
        }
    }


def test_mcp_servers_in_the_mcp_json_shape_too() -> None:
    t = parse_template(
        {
            "name": "m",
            "description": "d",
            "mcpServers": {"web": {"type": "http", "url": "https://x.test/mcp"}},
        },
        "p",
        "x",
    )
    assert t.claude.mcp_servers == (
        McpServer("web", {"type": "http", "url": "https://x.test/mcp"}),
    )


BAD: list[tuple[str, Any, str]] = [
    ("permissionMode", "yolo", "permissionMode: must be one of default, acceptEdits, plan, dontAsk, auto, bypassPermissions"),
    ("effort", "huge", "effort: must be one of low, medium, high, xhigh, max"),
    ("memory", "everywhere", "memory: must be one of user, project, local"),
    ("background", "yes", "background: must be true or false"),
    ("initialPrompt", 3, "initialPrompt: must be text: the first message the agent is given"),
    ("initialPrompt", "x" * 20_000, "initialPrompt: longer than 16,384 characters"),
    ("isolation", "container", "isolation: must be worktree (Claude Code's only isolation)"),
    ("skills", "Bad Name", "skills: an entry is not a skill name (lowercase, digits, hyphens)"),
    ("skills", ["../../etc/passwd"], "skills: an entry is a path: a skill is named, not located"),
    ("skills", [f"s{i}" for i in range(65)], "skills: more than 64 skills"),
    ("skills", {"a": 1}, "skills: must be a list of skill names"),
    ("mcpServers", "github", "mcpServers: must be a list of server names or {name: definition}"),
    ("mcpServers", ["deck"], "mcpServers: `deck` is agentdeck's own server; name yours otherwise"),
    ("mcpServers", ["a", "a"], "mcpServers: `a` is given twice"),
    ("mcpServers", ["../x"], "mcpServers: an entry is not a server name (letters, digits, _ -)"),
    ("mcpServers", [{"a": {"url": "https://x"}}], "mcpServers: server `a`: give `command` (stdio) or `type: http`/`sse` with `url`"),
    ("mcpServers", [{"a": {"type": "http", "url": "file:///etc"}}], "mcpServers: server `a`: `url` must be an http:// or https:// address"),
    ("mcpServers", [{"a": {"command": "x", "cwd": "/"}}], "mcpServers: server `a`: unknown key(s) `cwd` for a stdio server"),
    ("mcpServers", [{"a": {"command": "x", "args": "one"}}], "mcpServers: server `a`: `args` must be a list of at most 64 strings"),
    ("mcpServers", [{"a": {"command": "x", "env": {"A": 1}}}], "mcpServers: server `a`: `env` must map at most 64 names to strings"),
    ("mcpServers", [{f"s{i}": None} for i in range(17)], "mcpServers: more than 16 servers"),
    ("hooks", ["pwd"], "hooks: must map events (PreToolUse, Stop, …) to lists of {matcher, hooks}"),
    ("hooks", {"BeforeTool": []}, "hooks: `BeforeTool` is not a hook event"),
    ("hooks", {"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}, "hooks: Stop: only command hooks ({type: command, command: …})"),
    ("hooks", {"Stop": [{"hooks": [{"type": "command", "command": "pwd", "timeout": 0}]}]}, "hooks: Stop: `timeout` must be whole seconds, 1 to 3600"),
    ("hooks", {"Stop": [{"matcher": "$(rm -rf /)", "hooks": []}]}, "hooks: Stop: `matcher` must name tools (Bash, Edit|Write, mcp__x__.*)"),
    ("hooks", {"Stop": [{"hooks": [{"type": "command", "command": "x" * 5000}]}]}, "hooks: Stop: `command` must be a command line"),
    ("hooks", {"Stop": [{"hooks": [{"type": "command", "command": "pwd \x1b]0;owned\x07"}]}]}, "hooks: Stop: `command` must be a command line"),
    ("mcpServers", [{"a": {"command": "npx\x1b[2J"}}], "mcpServers: server `a`: `command` must be a program to run"),
    ("color", "\x1b[5mred", "color: must be a color's name (red, blue, green, yellow, purple, orange, …)"),
    ("description", "Reviews.\x1b]52;c;Y3VybCBldmlsLnNo\x07", "description: holds control characters (an escape sequence, NUL…)"),
    ("initialPrompt", "hi\x1b[31m", "initialPrompt: holds control characters (an escape sequence, NUL…)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "expected"), BAD, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(BAD)]
)
def test_bad_input_for_each_key_is_one_line_naming_it(key: str, value: Any, expected: str) -> None:
    data = {"name": "full", "description": "d", key: value}
    found = problems(data)
    assert len(found) == 1, found
    assert found[0].startswith(f"x/full.md: {expected}"), found[0]


def test_a_mistyped_key_gets_the_key_it_is_nearest_to() -> None:
    found = problems(
        {
            "name": "full",
            "description": "d",
            "permisionMode": "plan",
            "MaxTurns": 3,
            "colour": "red",
            "zzz": 1,
        }
    )
    assert [f.split(" (known:")[0] for f in found] == [
        "x/full.md: permisionMode: unknown key; did you mean permissionMode?",
        "x/full.md: MaxTurns: unknown key; did you mean maxTurns?",
        "x/full.md: colour: unknown key; did you mean color?",
        "x/full.md: zzz: unknown key",
    ]
    assert "initialPrompt" in found[-1] and "mcpServers" in found[-1]  # every key is known


def test_a_server_whose_tools_the_tools_list_leaves_out_is_refused() -> None:
    found = problems(
        {"name": "full", "description": "d", "tools": "Read", "mcpServers": ["github"]}
    )
    assert found == [
        "x/full.md: mcpServers: server `github` has no tool in `tools`; add mcp__github"
    ]


SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(
    ("data", "body", "key"),
    [
        (
            {"mcpServers": [{"gh": {"command": "npx", "env": {"GITHUB_TOKEN": SECRET}}}]},
            "p",
            "mcpServers",
        ),
        (
            {"mcpServers": [{"gh": {"command": "npx", "args": ["--token", SECRET]}}]},
            "p",
            "mcpServers",
        ),
        (
            {
                "mcpServers": [
                    {
                        "w": {
                            "type": "http",
                            "url": "https://x/m",
                            "headers": {"Authorization": f"Bearer {SECRET}"},
                        }
                    }
                ]
            },
            "p",
            "mcpServers",
        ),
        (
            {
                "hooks": {
                    "Stop": [
                        {
                            "hooks": [
                                {"type": "command", "command": f"curl -H 'x-api-key: {SECRET}' x"}
                            ]
                        }
                    ]
                }
            },
            "p",
            "hooks",
        ),
        ({"initialPrompt": f"use the key {SECRET}"}, "p", "initialPrompt"),
        ({}, f"export API_TOKEN={SECRET}", None),
    ],
)
def test_a_secret_in_the_template_text_is_refused_and_not_repeated(
    data: dict[str, Any], body: str, key: str | None
) -> None:
    found = problems({"name": "full", "description": "d", **data}, body)
    assert len(found) == 1 and "secret" in found[0], found
    assert found[0].startswith(f"x/full.md: {key}:" if key else "x/full.md: the text"), found
    assert SECRET not in found[0]


def test_a_reference_to_the_environment_is_no_secret() -> None:
    t = parse_template(
        {
            "name": "f",
            "description": "d",
            "mcpServers": [{"gh": {"command": "npx", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}],
        },
        "p",
        "x",
    )
    assert t.claude.mcp_servers[0].config == {
        "command": "npx",
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
    }


def test_isolation_and_a_contradicting_workspace() -> None:
    found = problems(
        {"name": "f", "description": "d", "isolation": "worktree", "workspace": "shared"}
    )
    assert found == ["x/full.md: isolation: isolation: worktree contradicts workspace: shared"]
