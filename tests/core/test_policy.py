"""The policy engine: paths, hosts, MCP, tool sets, grants, rule parsing, rule_for."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.policy import (
    Budgets,
    Decision,
    Grant,
    PolicyError,
    Profile,
    Rule,
    decide,
    profile_from_dict,
    rule_for,
    rules_for,
)

WS, HOME = "/work/repo", "/home/u"


def verdict(data: dict[str, Any], tool: str, tool_input: dict[str, Any], **kw: Any) -> Any:
    return decide(
        profile_from_dict(data, "t.yaml"), tool, tool_input, workspace=WS, home=HOME, **kw
    )


def file(path: str) -> dict[str, str]:
    return {"file_path": path}


PATH_CASES = [
    # protocol notes §3.2: path rules for writes are Edit(...); bare Edit is Edit only
    ("Edit(src/**)", "Write", f"{WS}/src/c.txt", "allow"),
    ("Edit(/src/**)", "Write", f"{WS}/src/c.txt", "allow"),
    ("Edit(./src/**)", "Write", f"{WS}/src/c.txt", "allow"),
    ("Edit(**/*.txt)", "Write", f"{WS}/src/c.txt", "allow"),
    ("Edit(//tmp/abs/**)", "Write", "/tmp/abs/x", "allow"),
    ("Edit", "Write", f"{WS}/src/a.txt", "ask"),
    ("Write", "Write", f"{WS}/src/a.txt", "allow"),
    ("Edit(src/**)", "MultiEdit", f"{WS}/src/a.py", "allow"),
    ("Edit(src/**)", "Edit", f"{WS}/src/a/b/c.py", "allow"),
    ("Edit(src/**)", "Edit", f"{WS}/lib/src/a.py", "ask"),  # anchored to the root
    ("Edit(*.txt)", "Edit", f"{WS}/deep/down/a.txt", "allow"),  # no slash: any depth
    ("Edit(*.txt)", "Edit", "/etc/a.txt", "ask"),  # ...but inside the workspace
    ("Edit(src/**)", "Edit", "src/../../etc/passwd", "ask"),  # `..` normalized
    ("Edit(src/**)", "Edit", "src/x/../y.py", "allow"),  # relative to the workspace
    ("Edit(src/**)", "Edit", f"{WS}/src", "ask"),  # `src/**` is what is inside
    ("Edit(src/)", "Edit", f"{WS}/src/a.py", "allow"),  # a directory: all beneath
    ("Edit(src)", "Edit", f"{WS}/src/a.py", "allow"),
    ("Edit(src/?.py)", "Edit", f"{WS}/src/a.py", "allow"),
    ("Edit(src/?.py)", "Edit", f"{WS}/src/ab.py", "ask"),
    ("Edit(src/[ab].py)", "Edit", f"{WS}/src/b.py", "allow"),
    ("Edit(src/[!ab].py)", "Edit", f"{WS}/src/b.py", "ask"),
    ("Edit(src/*.py)", "Edit", f"{WS}/src/a/b.py", "ask"),  # * stays in a segment
    ("Edit(src/**/test_*.py)", "Edit", f"{WS}/src/test_a.py", "allow"),
    ("Read(~/notes/**)", "Read", f"{HOME}/notes/a.md", "allow"),
    ("Read(~/notes/**)", "Read", "~/notes/a.md", "allow"),
    ("Read(~)", "Read", f"{HOME}/anything", "allow"),
    ("Read(//etc/hosts)", "Read", "/etc/hosts", "allow"),
    ("Read(//etc/hosts)", "Read", "//etc//hosts", "allow"),
    ("Read(/**)", "Read", f"{WS}/a", "allow"),
    ("Read(/**)", "Read", f"{WS}-other/a", "ask"),
    ("Read(src/**)", "Edit", f"{WS}/src/a", "ask"),  # Read rules do not cover Edit
    ("Edit(src/**)", "Read", f"{WS}/src/a", "ask"),
    ("Edit(nb/**)", "NotebookEdit", f"{WS}/nb/a.ipynb", "allow"),
]


@pytest.mark.parametrize(("rule", "tool", "path", "expected"), PATH_CASES)
def test_path_rules(rule: str, tool: str, path: str, expected: str) -> None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    v = verdict({"allow": [rule]}, tool, {key: path})
    assert v.decision == Decision(expected), v
    deny = verdict({"allow": [tool], "deny": [rule]}, tool, {key: path})
    assert deny.decision == (Decision.DENY if expected == "allow" else Decision.ALLOW), deny


SEARCH_CASES = [
    ({"path": f"{HOME}/.ssh"}, "deny"),
    ({"path": HOME}, "deny"),  # the search would reach ~/.ssh
    ({"path": "/"}, "deny"),
    ({"path": f"{WS}/src"}, "allow"),
    ({}, "allow"),  # the workspace
]


@pytest.mark.parametrize("tool", ["Grep", "Glob", "LS"])
@pytest.mark.parametrize(("tool_input", "expected"), SEARCH_CASES)
def test_searches_are_judged_by_read_rules(
    tool: str, tool_input: dict[str, str], expected: str
) -> None:
    data = {"allow": [tool], "deny": ["Read(~/.ssh/**)"]}
    assert verdict(data, tool, {"pattern": "*", **tool_input}).decision == Decision(expected)


def test_glob_patterns_and_search_allows() -> None:
    deny = {"allow": ["Glob"], "deny": ["Read(~/.ssh/**)"]}
    assert verdict(deny, "Glob", {"pattern": f"{HOME}/.ssh/*"}).decision is Decision.DENY
    assert verdict(deny, "Glob", {"pattern": "../../home/u/.ssh/id*"}).decision is Decision.DENY
    allow = {"allow": ["Read(src/**)"]}
    assert verdict(allow, "Grep", {"pattern": "x", "path": "src/pkg"}).decision is Decision.ALLOW
    assert verdict(allow, "Grep", {"pattern": "x", "path": "src"}).decision is Decision.ALLOW
    assert verdict(allow, "Grep", {"pattern": "x"}).decision is Decision.ASK
    narrow = {"allow": ["Read(src/*.py)"]}  # not everything beneath src
    assert verdict(narrow, "Grep", {"pattern": "x", "path": "src"}).decision is Decision.ASK


def test_inputs_without_their_field_are_never_allowed_by_a_specifier() -> None:
    assert verdict({"allow": ["Read(/**)"]}, "Read", {}).decision is Decision.ASK
    assert verdict({"allow": ["Read"]}, "Read", {}).decision is Decision.ALLOW
    assert verdict({"allow": ["Read"], "deny": ["Read(//x)"]}, "Read", {}).decision is Decision.ASK
    assert verdict({"allow": ["WebFetch(domain:a.com)"]}, "WebFetch", {}).decision is Decision.ASK
    assert verdict({"default": "deny"}, "Edit", {"file_path": 3}).decision is Decision.DENY


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/a", "allow"),
        ("http://EXAMPLE.com:8080/", "allow"),
        ("https://example.com./", "allow"),
        ("https://docs.example.com/", "ask"),  # exact host, as Claude Code
        ("https://example.com.evil.io/", "ask"),
        ("https://evil.io/?u=https://example.com", "ask"),
        ("https://user@example.com@evil.io/", "ask"),
        ("not a url", "ask"),
    ],
)
def test_webfetch_domains(url: str, expected: str) -> None:
    data = {"allow": ["WebFetch(domain:example.com)"]}
    assert verdict(data, "WebFetch", {"url": url}).decision == Decision(expected)


@pytest.mark.parametrize(
    ("rule", "tool", "expected"),
    [
        ("mcp__perm__shout", "mcp__perm__shout", "allow"),
        ("mcp__perm__shout", "mcp__perm__other", "ask"),
        ("mcp__perm__*", "mcp__perm__other", "allow"),
        ("mcp__perm", "mcp__perm__other", "allow"),
        ("mcp__perm", "mcp__permx__other", "ask"),
        ("mcp__my-srv", "mcp__my-srv__go", "allow"),
        ("Agent(Explore)", "Agent", "allow"),
        ("Agent(Explore)", "Task", "allow"),
        ("WebSearch", "WebSearch", "allow"),
    ],
)
def test_tool_rules(rule: str, tool: str, expected: str) -> None:
    v = verdict({"allow": [rule]}, tool, {"subagent_type": "Explore"})
    assert v.decision == Decision(expected)


def test_order_deny_ask_allow_default() -> None:
    data = {"allow": ["Bash(git:*)"], "ask": ["Bash(git push:*)"], "deny": ["Bash(git push -f:*)"]}
    assert verdict(data, "Bash", {"command": "git log"}).decision is Decision.ALLOW
    assert verdict(data, "Bash", {"command": "git push"}).decision is Decision.ASK
    v = verdict(data, "Bash", {"command": "git push -f"})
    assert (v.decision, v.rule, v.source) == (Decision.DENY, "Bash(git push -f:*)", "profile:t")
    assert "deny list of profile t" in v.reason
    d = verdict(data, "Bash", {"command": "make"})
    assert (d.decision, d.rule) == (Decision.ASK, None) and "defaults to ask" in d.reason


def test_enabled_and_disabled_tools() -> None:
    data = {"enabled_tools": ["Read", "mcp__srv"], "disabled_tools": ["Read"], "allow": ["Bash"]}
    bash = verdict(data, "Bash", {"command": "ls"})
    assert (bash.decision, bash.rule) == (Decision.DENY, None)
    assert "not one of the tools profile t enables" in bash.reason
    read = verdict(data, "Read", file("a"))
    assert (read.decision, read.rule) == (Decision.DENY, "Read") and "disabled" in read.reason
    assert verdict(data, "mcp__srv__x", {}).decision is Decision.ASK


def test_grants_follow_the_profile_lists() -> None:
    data = {"allow": ["Bash(npm:*)"], "ask": ["Bash(npm publish:*)"]}
    allow_make = Grant("Bash(make:*)", Decision.ALLOW)
    v = verdict(data, "Bash", {"command": "make test"}, grants=[allow_make])
    assert (v.decision, v.rule, v.source) == (Decision.ALLOW, "Bash(make:*)", "grant")
    assert "remembered allow grant" in v.reason
    deny_npm = Grant("Bash(npm ci:*)", Decision.DENY)
    assert verdict(data, "Bash", {"command": "npm ci"}, grants=[deny_npm]).decision == "deny"
    allow_publish = Grant("Bash(npm publish:*)", "allow")  # type: ignore[arg-type]
    asked = verdict(data, "Bash", {"command": "npm publish"}, grants=[allow_publish])
    assert asked.decision is Decision.ASK  # ask rules come before allow grants
    with pytest.raises(PolicyError, match="allows or denies"):
        Grant("Bash", Decision.ASK)
    with pytest.raises(PolicyError, match="grant"):
        Grant("Bash(", Decision.ALLOW)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty rule"),
        ("Bash(", "unbalanced parentheses"),
        ("Bash(ls))", "unbalanced parentheses"),
        ("Bash)", "unbalanced parentheses"),
        ("Bash(ls) x", "unbalanced parentheses"),
        ("Bash()", "empty specifier"),
        ("Read(  )", "empty specifier"),
        ("Bash(:*)", "empty command prefix"),
        ("Bash(git:* status)", "may only end"),
        ("Bash(echo 'x)", "unbalanced quote"),
        ("Bash(curl * | sh)", "can never match"),
        ("Bash(a && b)", "can never match"),
        ("Bash(echo $(id))", "can never match"),
        ("Bash(echo hi > f)", "can never match"),
        ("WebFetch(foo)", "unknown WebFetch specifier"),
        ("WebFetch(domain:)", "unknown WebFetch specifier"),
        ("WebFetch(domain:a b)", "unknown WebFetch specifier"),
        ("Write(src/**)", "never matches in Claude Code"),
        ("Glob(src/**)", "written `Read(src/**)`"),
        ("Read(src/[a)", "unclosed `[`"),
        ("Read(src**)", "whole path segment"),
        ("Read(../x)", "`..`"),
        ("Read(~root/x)", "`~user`"),
        ("Read(a//b)", "empty path segment"),
        ("WebSearch(x)", "take no specifier"),
        ("mcp__a__b(x)", "MCP rules take no specifier"),
        ("not a tool", "not a tool name"),
        ("Bash*", "not a tool name"),
    ],
)
def test_malformed_rules(text: str, problem: str) -> None:
    with pytest.raises(PolicyError, match="<rule>") as err:
        Rule.parse(text)
    assert problem in err.value.problem


def test_rules_keep_their_text() -> None:
    assert Rule.parse("  Bash(git:*) ").text == "Bash(git:*)"
    assert Rule.parse("Bash(git:*)") == Rule.parse("Bash(git:*)")
    assert Rule.parse("Read") != Rule.parse("Edit")


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"command": "npm run test -- -x"}, "Bash(npm run test:*)"),
        ("Bash", {"command": "git status"}, "Bash(git status:*)"),
        ("Bash", {"command": "ls"}, "Bash(ls:*)"),
        ("Bash", {"command": "rm -rf build"}, "Bash(rm -rf build)"),
        ("Bash", {"command": "FOO=1 pytest tests/"}, "Bash(pytest tests/)"),
        ("Bash", {"command": "python3 -c 'print(1)'"}, "Bash(python3 -c 'print(1)')"),
        ("Bash", {"command": "git add . && git commit -m x"}, "Bash(git add:*)"),
        ("Edit", file(f"{WS}/src/a.py"), "Edit(/src/a.py)"),
        ("Write", file("src/new file.py"), "Edit(/src/new file.py)"),
        ("Read", file(f"{HOME}/notes.md"), "Read(~/notes.md)"),
        ("Read", file("/etc/hosts"), "Read(//etc/hosts)"),
        ("Read", file(f"{WS}/a*b?.txt"), "Read(/a\\*b\\?.txt)"),
        ("Grep", {"pattern": "x", "path": f"{WS}/src"}, "Read(/src/)"),
        ("Grep", {"pattern": "x"}, "Read(/**)"),
        ("WebFetch", {"url": "https://Docs.Example.com/x"}, "WebFetch(domain:docs.example.com)"),
        ("mcp__perm__shout", {}, "mcp__perm__shout"),
        ("TodoWrite", {}, "TodoWrite"),
    ],
)
def test_rule_for_allows_the_call_it_was_made_for(
    tool: str, tool_input: dict[str, Any], expected: str
) -> None:
    text = rule_for(tool, tool_input, WS, home=HOME)
    assert text == expected
    if "&&" not in str(tool_input):
        granted = decide(
            Profile(name="p", default=Decision.DENY), tool, tool_input, workspace=WS, home=HOME,
            grants=[Grant(text, Decision.ALLOW)],
        )  # fmt: skip
        assert granted.decision is Decision.ALLOW, granted


def test_rules_for_compound_lines() -> None:
    line = {"command": "git add . && git commit -m x; rm -rf build"}
    rules = rules_for("Bash", line, WS)
    assert rules == ("Bash(git add:*)", "Bash(git commit:*)", "Bash(rm -rf build)")
    grants = [Grant(r, Decision.ALLOW) for r in rules]
    p = Profile(name="p", default=Decision.DENY)
    assert decide(p, "Bash", line, workspace=WS, home=HOME, grants=grants).decision == "allow"


@pytest.mark.parametrize("command", ["cat <<EOF\nEOF", "$(x) y", "echo hi > f", "echo 'x"])
def test_rule_for_refuses_commands_no_rule_could_allow(command: str) -> None:
    with pytest.raises(PolicyError, match="rule_for"):
        rule_for("Bash", {"command": command}, WS)


def test_profile_fields_and_budgets() -> None:
    p = profile_from_dict(
        {
            "name": "ci",
            "default": "deny",
            "budgets": {"max_usd": 2, "max_turns": 10, "daily_usd": 20.5, "max_repeated_calls": 3},
            "approval_timeout_seconds": 30,
            "sandbox": {"mode": "bash", "network": {"mode": "open"}},
            "additional_directories": ["/data"],
        },
        "ci.yaml",
    )
    assert p.name == "ci" and p.default is Decision.DENY and p.source == "ci.yaml"
    assert p.budgets == Budgets(max_usd=2.0, max_turns=10, daily_usd=20.5, max_repeated_calls=3)
    assert (
        p.approval_timeout_seconds == 30
        and p.sandbox.mode == "bash"
        and p.sandbox.network == "open"
    )
    assert p.additional_directories == ("/data",)
    assert profile_from_dict({}, "dir/nameless.yaml").name == "nameless"
    assert profile_from_dict({}, "x").approval_timeout_seconds == 600


@pytest.mark.parametrize(
    ("data", "line", "problem"),
    [
        ({"alow": []}, 1, "unknown key `alow`"),
        ({"deny": ["Read(~/.ssh/**)", "Bash("]}, 3, "in `deny`: unbalanced parentheses"),
        ({"allow": "Bash"}, 2, "`allow` must be a list"),
        ({"allow": [3]}, 3, "entries must be strings"),
        ({"default": "maybe"}, None, "`default` must be allow, ask or deny"),
        ({"budgets": {"max_usd": -1}}, 7, "positive number"),
        ({"budgets": {"max_turns": 1.5}}, 7, "positive integer"),
        ({"budgets": {"max_turns": True}}, 7, "positive integer"),
        ({"budgets": {"max_dollars": 1}}, 7, "unknown budget"),
        ({"budgets": []}, 6, "`budgets` must be a mapping"),
        ({"enabled_tools": ["Bash(ls)"]}, None, "lists tool names"),
        ({"approval_timeout_seconds": 0}, None, "positive number"),
        ({"sandbox": [1]}, None, "sandbox: must be a mapping"),
        ({"name": ""}, None, "non-empty string"),
    ],
)
def test_malformed_profiles_name_source_line_and_problem(
    data: dict[str, Any], line: int | None, problem: str
) -> None:
    lines = {
        (): 1, ("alow",): 1, ("allow",): 2, ("allow", 0): 3, ("deny",): 2, ("deny", 1): 3,
        ("budgets",): 6, ("budgets", "max_usd"): 7, ("budgets", "max_turns"): 7,
        ("budgets", "max_dollars"): 7,
    }  # fmt: skip
    if line is None:
        lines = {}
    with pytest.raises(PolicyError) as err:
        profile_from_dict(data, "my.yaml", lines=lines)
    assert err.value.source == "my.yaml" and err.value.line == line
    assert problem in err.value.problem
    assert str(err.value).startswith("my.yaml")


def test_relative_workspace_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        decide(Profile(name="p"), "Read", file("a"), workspace="repo", home=HOME)
