"""Which tool calls can change files, so get a checkpoint first: deny when unsure."""

from __future__ import annotations

import pytest

from agentdeck.core.file_changes import can_change_files, read_only_command


@pytest.mark.parametrize(
    "command",
    [
        "true",
        "ls",
        "ls -la src",
        "cat x",
        "cat 'a file' | grep -n foo | wc -l",
        "git status",
        "git status --porcelain",
        "git -C sub --no-pager log --oneline -5",
        "git diff HEAD~1 -- src",
        "echo hi >/dev/null 2>&1",
        "cd src && ls",
        "echo $(date) `whoami`",
        "diff <(ls a) <(ls b)",
        "find . -name '*.py' -type f",
        "sort -u names.txt",
        "sort --key=2 names.txt",
        "rg -n pattern src",
        "head -c 100 x; tail -n 5 y",
        "test -f x && echo yes || echo no",
        "grep -q x f < input.txt",
        "date +%s",
    ],
)
def test_read_only_commands_get_no_checkpoint(command: str) -> None:
    assert read_only_command(command)
    assert not can_change_files("Bash", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "echo hi > f",
        "echo hi >> f",
        "ls > listing.txt",
        "cat x 2> err.log",
        "ls &> out",
        "true && touch x",
        "cat $(rm -rf x)",
        "git status; make",
        "sed -i s/a/b/ f",
        "awk '{print > \"out\"}' f",
        "ls | xargs rm",
        "ls | tee out",
        "bash -c 'ls'",
        "eval ls",
        "env rm x",
        "FOO=1 ls",
        "LD_PRELOAD=./x.so ls",
        "$CMD x",
        "./ls",
        "/bin/ls",
        "python -c 'print(1)'",
        "pytest",
        "make test",
        "unknown-tool --flag",
        "sort -o out.txt in.txt",
        "sort -uo out.txt in.txt",
        "sort --output=out.txt in.txt",
        "sort --compress-program=sh in.txt",
        "sort --outp=out.txt in.txt",  # getopt_long takes a long option's unique prefix
        "sort --comp=sh in.txt",
        "file --comp -m magic",
        "date --se tomorrow",
        "tree -o out.txt",
        "tree -R -H . -L 1",  # 00Tree.html in each directory
        "rg --pre ./script pattern",
        "find . -delete",
        "find . -name x -exec rm {} +",
        "find . -execdir rm {} ;",
        "find . -fprint out",
        "date -s tomorrow",
        # bash evaluates an array subscript in a variable's name: $(...) runs
        "test -v 'a[$(touch x)]'",
        "printf -v 'a[$(touch x)]' hi",
        "file -C -m magic",
        "git commit -m x",
        "git checkout -- .",
        "git stash",
        "git -c diff.external=./x diff",
        "git diff --output=patch.txt",
        "git log --output patch.txt",
        "git diff --ext-diff",
        "git log --outp=patch.txt",
        "git --git-dir=x status",
        "git",
        "cat <<EOF\nhi\nEOF",
        "for f in *; do rm $f; done",
        "echo 'unbalanced",
        "",
    ],
)
def test_commands_that_can_change_files_or_are_not_understood_get_one(command: str) -> None:
    assert not read_only_command(command)
    assert can_change_files("Bash", {"command": command})


def test_a_bash_call_without_a_command_gets_one() -> None:
    assert can_change_files("Bash", {})
    assert can_change_files("Bash", {"command": ["ls"]})


@pytest.mark.parametrize(
    "tool",
    ["Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "Task", "Agent",
     "mcp__deck__list_agents", "mcp__deck__spawn_agent", "mcp__deck__ask_orchestrator"],
)  # fmt: skip
def test_tools_that_only_read_get_no_checkpoint(tool: str) -> None:
    assert not can_change_files(tool, {"file_path": "/w/x", "pattern": "x"})


@pytest.mark.parametrize(
    "tool",
    ["Write", "Edit", "MultiEdit", "NotebookEdit", "mcp__deck__merge_agent",
     "mcp__files__write_file", "mcp__deckx__list_agents", "SomeNewTool"],
)  # fmt: skip
def test_tools_that_write_or_are_unknown_get_one(tool: str) -> None:
    assert can_change_files(tool, {"file_path": "/w/x"})
