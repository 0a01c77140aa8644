"""Which names the merge queue takes as the branch to land on (``git
check-ref-format --branch``'s rules, and no name git would read as an option)."""

from __future__ import annotations

import subprocess

import pytest

from agentdeck.core.worktree import branch_problem

GOOD = ("main", "feature/x", "release-1.2", "agentdeck/a1b2c3/fixer", "fix_it", "v2", "a.b")
BAD = (
    "", "-x", "--upload-pack=x", "/main", "main/", "main.", "main.lock", "a/.b", "a/b.lock",
    "../main", "a..b", "a//b", "@", "a@{1}", "a b", "a\tb", "a\nb", "a\x00b", "a\x7fb",
    "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", "x" * 256,
)  # fmt: skip


@pytest.mark.parametrize("name", GOOD)
def test_a_branch_git_would_make_is_taken(name: str) -> None:
    assert branch_problem(name) is None


@pytest.mark.parametrize("name", BAD)
def test_a_name_git_would_refuse_or_read_as_an_option_is_not(name: str) -> None:
    assert branch_problem(name)


@pytest.mark.parametrize("name", [*GOOD, *(n for n in BAD if "\x00" not in n)])
def test_what_is_taken_git_takes_too(name: str) -> None:
    """Never looser than git: whatever passes here, git calls a branch name."""
    if branch_problem(name) is None:
        done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True)
        assert done.returncode == 0, name
