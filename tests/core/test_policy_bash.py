"""Splitting Bash lines into simple commands, and Bash rules over them."""

from __future__ import annotations

import pytest

from agentdeck.core.bash_split import SUBST, split_command
from agentdeck.core.policy import Decision, decide, profile_from_dict

WS, HOME = "/work/repo", "/home/u"


def texts(command: str) -> list[str]:
    split = split_command(command)
    assert split.problem is None, split.problem
    return [c.text for c in split.commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", ["git status"]),
        ("git status; rm -rf ~", ["git status", "rm -rf ~"]),
        ("a && b || c | d |& e & f", ["a", "b", "c", "d", "e", "f"]),
        ("a\nb", ["a", "b"]),
        ("git status $(rm -rf ~)", ["rm -rf ~", f"git status {SUBST}"]),
        ("echo `whoami`", ["whoami", f"echo {SUBST}"]),
        ('echo "$(id)"', ["id", f"echo {SUBST}"]),
        ("(cd a && make) || { echo no; }", ["cd a", "make", "echo no"]),
        ("if git diff; then rm x; fi", ["git diff", "rm x"]),
        ("while true; do ls; done", ["true", "ls"]),
        ("! grep -q x f", ["grep -q x f"]),
        ("diff <(ls a) <(ls b)", ["ls a", "ls b", f"diff {SUBST} {SUBST}"]),
        ("echo 'a; b' \"c && d\"", ["echo a; b c && d"]),
        ("echo a\\;b", ["echo a;b"]),
        ("git status # ; rm -rf ~", ["git status"]),
        ("FOO=1 BAR=x git status", ["FOO=1 BAR=x git status"]),
        ("ls >/dev/null 2>&1 &", ["ls"]),
        ("bash -c 'ls; rm -rf /'", ["bash -c ls; rm -rf /", "ls", "rm -rf /"]),
        ("eval 'rm -rf ~'", ["eval rm -rf ~", "rm -rf ~"]),
        ("git \\\n  status", ["git status"]),
        ("cat <<< hello", ["cat"]),
    ],
)
def test_split(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "echo 'unbalanced",
        'echo "unbalanced',
        "echo $(unclosed",
        "echo `unclosed",
        "cat <<EOF\nrm -rf ~\nEOF",
        "echo $((1 + 2))",
        "echo $'a\\nb'",
        "for f in *; do rm $f; done",
        "case x in a) rm;; esac",
        "f() { rm -rf ~; }; f",
        "a=(1 2)",
        "echo )",
        "echo >",
        "echo ${x:-$(rm -rf ~)}",
        "eval $(curl x)",
        "",
        "   ",
        "echo a\rb",
    ],
)
def test_unsure_commands_are_flagged(command: str) -> None:
    assert split_command(command).problem


def test_dynamic_names_and_file_writes() -> None:
    (sub, outer) = split_command("$(echo rm) -rf /").commands
    assert not sub.dynamic_name and outer.dynamic_name
    assert split_command("{rm,-rf,~}").commands[0].dynamic_name
    assert split_command("$CMD x").commands[0].dynamic_name
    assert split_command("echo hi > out.txt").commands[0].writes_file
    assert split_command("echo hi >> out.txt").commands[0].writes_file
    assert split_command("make &> log").commands[0].writes_file
    assert not split_command("make 2>&1 >/dev/null").commands[0].writes_file


CASES = [
    # (allow, deny, command, expected) — protocol notes §3.2 first
    (["Bash"], [], "touch marker.txt", "allow"),
    (["Bash(touch:*)"], [], "touch marker.txt", "allow"),
    (["Bash(touch *)"], [], "touch marker.txt", "allow"),
    (["Bash(touch marker.txt)"], [], "touch marker.txt", "allow"),
    (["Bash(echo *)"], [], "touch marker.txt", "ask"),
    (["Bash(git:*)"], [], "git init -q repo", "allow"),
    (["Bash(git init *)"], [], "git init -q repo", "allow"),
    (["Bash(git:*)"], [], "git init -q repo && touch x", "ask"),
    (["Bash(python3:*)"], [], "python3 -c 'print(1)'", "allow"),
    ([], ["Bash(echo:*)"], "echo hi", "deny"),
    (["Bash"], ["Bash(touch:*)"], "touch marker.txt", "deny"),
    # prefix rules stop at a word boundary
    (["Bash(git:*)"], [], "git", "allow"),
    (["Bash(git:*)"], [], "gitk", "ask"),
    (["Bash(npm run test:*)"], [], "npm run test -- -x", "allow"),
    (["Bash(npm run test:*)"], [], "npm run test:unit", "ask"),
    (["Bash(ls *)"], [], "ls", "allow"),
    (["Bash(ls *)"], [], "lsof", "ask"),
    # wildcards cross words
    (["Bash(git * main)"], [], "git push origin main", "allow"),
    (["Bash(git * main)"], [], "git push origin main2", "ask"),
    (["Bash(touch marker.txt)"], [], "touch marker.txt other", "ask"),
    # smuggling: every sub-command must be allowed
    (["Bash(git status:*)"], [], "git status; rm -rf ~", "ask"),
    (["Bash(git status:*)"], [], "git status $(rm -rf ~)", "ask"),
    (["Bash(git status:*)"], [], "git status `rm -rf ~`", "ask"),
    (["Bash(git status:*)"], [], "git status && curl x | sh", "ask"),
    (["Bash(git status:*)"], [], "git status\nrm -rf ~", "ask"),
    (["Bash(git status:*)"], [], "git status & rm -rf ~", "ask"),
    (["Bash(git status:*)"], [], "(git status; rm -rf ~)", "ask"),
    (["Bash(git status:*)"], [], "{ git status; rm -rf ~; }", "ask"),
    (["Bash(git status:*)"], [], 'git status "$(rm -rf ~)"', "ask"),
    (["Bash(git status:*)"], [], "git status <(rm -rf ~)", "ask"),
    (["Bash(git status:*)", "Bash(rm:*)"], [], "git status $(rm -rf ~)", "allow"),
    (["Bash(git status:*)"], [], "git status 'a; rm -rf ~'", "allow"),  # quoted: data
    (["Bash(git status:*)"], [], "git status # && rm -rf ~", "allow"),  # a comment
    (["Bash(git status:*)"], [], "git status <<EOF\nx\nEOF", "ask"),  # unsure
    (["Bash(bash:*)"], [], "bash -c 'rm -rf ~'", "ask"),
    (["Bash(echo:*)"], [], "echo hi > ~/.bashrc", "ask"),  # output into a file
    (["Bash(echo:*)"], [], "echo hi > /dev/null 2>&1", "allow"),
    (["Bash"], [], "echo hi > ~/.bashrc", "allow"),  # the bare tool allows all
    (["Bash(*)"], [], "$(echo rm) -rf /", "ask"),  # a computed program
    # environment prefixes
    (["Bash(git status:*)"], [], "FOO=1 git status", "allow"),
    (["Bash(git status:*)"], [], "PATH=. git status", "ask"),
    (["Bash(git status:*)"], [], "LD_PRELOAD=/x.so git status", "ask"),
    (["Bash(git status:*)"], [], "GIT_SSH_COMMAND=x git status", "ask"),
    (["Bash(git status:*)"], [], "FOO=1; git status", "ask"),  # a bare assignment
    # deny rules look through wrappers, paths and assignments
    (["Bash"], ["Bash(sudo:*)"], "command sudo ls", "deny"),
    (["Bash"], ["Bash(sudo:*)"], "/usr/bin/sudo ls", "deny"),
    (["Bash"], ["Bash(rm:*)"], "env FOO=1 nohup timeout 5 rm -rf x", "deny"),
    (["Bash"], ["Bash(rm:*)"], "sudo -u root rm x", "deny"),
    (["Bash"], ["Bash(rm:*)"], "X=1 rm x", "deny"),
    (["Bash"], ["Bash(rm:*)"], "ls; bash -c 'rm -rf ~'", "deny"),
    (["Bash"], ["Bash(rm:*)"], "'rm' -rf ~", "deny"),
    (["Bash"], ["Bash(rm:*)"], "r\\m -rf ~", "deny"),
    (["Bash"], ["Bash(rm:*)"], "echo $(rm -rf ~)", "deny"),
    (["Bash"], ["Bash(rm:*)"], "cat <<EOF\nEOF", "ask"),  # unsure and guarded
]


@pytest.mark.parametrize(("allow", "deny", "command", "expected"), CASES)
def test_bash_rules(allow: list[str], deny: list[str], command: str, expected: str) -> None:
    p = profile_from_dict({"allow": allow, "deny": deny}, "test.yaml")
    verdict = decide(p, "Bash", {"command": command}, workspace=WS, home=HOME)
    assert verdict.decision == Decision(expected), verdict
    assert verdict.reason


def test_compound_allow_names_every_rule() -> None:
    p = profile_from_dict({"allow": ["Bash(git:*)", "Bash(touch:*)"]}, "t.yaml")
    verdict = decide(p, "Bash", {"command": "git init && touch x"}, workspace=WS, home=HOME)
    assert verdict.decision is Decision.ALLOW
    assert verdict.rule == "Bash(git:*), Bash(touch:*)"
    assert "`touch x` by `Bash(touch:*)`" in verdict.reason


def test_default_allow_never_allows_an_unsure_command() -> None:
    p = profile_from_dict({"default": "allow", "deny": ["Bash(rm:*)"]}, "t.yaml")
    heredoc = {"command": "cat <<EOF | sh\nrm -rf ~\nEOF"}
    verdict = decide(p, "Bash", heredoc, workspace=WS, home=HOME)
    assert verdict.decision is Decision.ASK and "heredocs" in verdict.reason
    strict = profile_from_dict({"default": "deny", "allow": ["Bash"]}, "t.yaml")
    assert decide(strict, "Bash", {}, workspace=WS, home=HOME).decision is Decision.ALLOW
    guarded = profile_from_dict({"allow": ["Bash"], "deny": ["Bash(rm:*)"]}, "t.yaml")
    assert decide(guarded, "Bash", {}, workspace=WS, home=HOME).decision is Decision.ASK
