"""Agents in worktrees on the real Claude Code CLI: ``agentdeck run --worktree``
through a daemon, the turn's work committed on the agent's branch, the diff through
the CLI and the API, two workers on one repository, and the clear refusals."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.settings import Settings
from tests.support.deckcli import Done, deck, deck_env
from tests.support.served import serving
from tests.worktrees.conftest import git

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FIXED = "def add(a, b):\n    return a + b\n"


def scenario(root: Path, name: str, notes: str) -> Path:
    """Edit calc.py (fix add) and write a notes file, then say so."""
    edit = {
        "name": "Edit",
        "input": {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
    }
    write = {"name": "Write", "input": {"file_path": f"{name}.md", "content": notes}}
    path = root / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "turns": [
                    {"reply": [{"tool_use": edit}]},
                    {"reply": [{"tool_use": write}]},
                    {"reply": [{"text": "Fixed add() and wrote notes."}]},
                ],
            }
        )
    )
    return path


async def cli(env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(deck, env, *args)


async def test_an_agent_in_a_worktree_works_on_its_branch_and_its_diff_shows_it(
    settings: Settings, tmp_path: Path, repo: Path
) -> None:
    env = deck_env(tmp_path)
    async with serving(settings) as served:
        done = await cli(
            env, "run", "--worktree", "--cwd", str(repo), "--name", "fixer", "--json",
            "--scenario", str(scenario(tmp_path, "fixer", "add() adds now\n")), "fix add",
        )  # fmt: skip
        assert done.code == 0, done.err
        agent: dict[str, Any] = done.json()["agent"]
        assert agent["state"] == AgentState.DONE
        worktree = agent["extra"]["worktree"]
        branch = worktree["branch"]
        assert branch == f"agentdeck/{agent['id']}/fixer"
        assert agent["cwd"] == worktree["path"] == str(settings.worktrees_dir / agent["id"])

        # The turn's work is a commit on the agent's branch; main is as it was.
        work = Path(worktree["path"])
        assert (work / "calc.py").read_text() == FIXED
        assert git(work, "status", "--porcelain") == ""
        assert "work in progress" in git(repo, "log", "-1", "--format=%s", branch)
        assert set(git(repo, "diff", "--name-only", "main", branch).split()) == {
            "calc.py", "fixer.md",
        }  # fmt: skip
        assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
        assert not (repo / "fixer.md").exists()

        # Review: the CLI (piped, so plain) and the API say the same.
        stat = await cli(env, "diff", agent["id"], "--stat")
        assert stat.code == 0, stat.err
        assert f"fixer on {branch}" in stat.out
        assert re.search(r"calc\.py\s+\+1 -1", stat.out) and re.search(
            r"fixer\.md\s+\+1 -0", stat.out
        )
        patch = await cli(env, "diff", "fixer")
        assert "+    return a + b" in patch.out and "\x1b[" not in patch.out
        async with served.api() as api:
            found = (await api.get(f"/api/agents/{agent['id']}/diff")).json()
            assert {f["path"]: f["added"] for f in found["files"]} == {"calc.py": 1, "fixer.md": 1}
            assert found["branch"] == branch and "+add() adds now" in found["patch"]
            plain = await api.post(
                "/api/agents", json={"prompt": "hi", "scenario": "chat", "keep_alive": False}
            )
            refused = await api.get(f"/api/agents/{plain.json()['id']}/diff")
            assert refused.status_code == 400
            assert "has no worktree" in refused.json()["error"]["message"]

        # Landing it through the daemon (the CLI goes there when it runs), test-gated.
        gated = await cli(env, "merge", "fixer", "--test", "grep -q 'a + b' calc.py")
        assert gated.code == 0, gated.err + gated.out
        assert gated.out.startswith("landed on main as ")
        assert (repo / "calc.py").read_text() == FIXED and (repo / "fixer.md").exists()
        again = await cli(env, "merge", "fixer")
        assert again.code == 1 and "nothing to merge" in again.out


async def test_two_workers_on_one_repository_do_not_trample_each_other(
    settings: Settings, tmp_path: Path, repo: Path
) -> None:
    env = deck_env(tmp_path)
    async with serving(settings) as served, served.api() as api:
        ids = []
        for name in ("left", "right"):
            body = {
                "prompt": "fix add", "name": name, "cwd": str(repo), "workspace": "worktree",
                "scenario": str(scenario(tmp_path, name, f"{name} was here\n")),
                "keep_alive": False,
            }  # fmt: skip
            created = await api.post("/api/agents", json=body)
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        for agent_id in ids:
            done = await cli(env, "logs", agent_id, "--follow")
            assert done.code == 0, done.err
        branches = []
        for agent_id, name in zip(ids, ("left", "right"), strict=True):
            agent = (await api.get(f"/api/agents/{agent_id}")).json()
            assert agent["state"] == AgentState.DONE, agent
            branch = agent["extra"]["worktree"]["branch"]
            branches.append(branch)
            # Each changed the same file and wrote its own: each branch has only its own note.
            changed = set(git(repo, "diff", "--name-only", "main", branch).split())
            assert changed == {"calc.py", f"{name}.md"}
        assert branches[0] != branches[1]
        assert git(repo, "show", f"{branches[0]}:calc.py") == FIXED


async def test_a_worktree_needs_a_repository_and_says_so(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = await cli(deck_env(tmp_path), "run", "--worktree", "--cwd", str(plain), "hello")
    assert done.code == 2
    error, hint = done.err.strip().splitlines()  # one line, and what to do
    assert error == f"error: {plain} is not in a git repository"
    assert "without --worktree" in hint
    based = await cli(deck_env(tmp_path), "run", "--base", "main", "hello")
    assert based.code == 2 and "--base is for --worktree" in based.err
