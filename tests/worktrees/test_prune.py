"""Never lose work: ``agentdeck worktrees`` says what each worktree holds, and
``prune`` removes only what is empty or merged, never a live agent's, and with
--force names what it loses. A killed agent and a gone record leave it in place."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.worktrees import Worktrees
from tests.support.deckcli import Done, deck, deck_env
from tests.worktrees.conftest import git

pytestmark = pytest.mark.anyio


async def cli(env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(deck, env, *args)


async def test_prune_keeps_what_is_nowhere_else_and_says_what_force_would_lose(
    settings: Settings, tmp_path: Path, repo: Path
) -> None:
    settings.ensure_home()
    trees = Worktrees(settings.worktrees_dir)
    made = {
        name: await trees.create(f"agent{name:0>11}", name, repo, base="main")
        for name in ("empty", "work", "live", "orphan", "merged")
    }
    # "work" and "live" hold a commit of their own; "orphan" one that main has too.
    for name in ("work", "live", "orphan"):
        (Path(made[name].path) / f"{name}.txt").write_text(f"{name}\n")
        await trees.commit_wip(made[name], f"{name}'s work")
    git(repo, "merge", "--quiet", "--ff-only", made["orphan"].branch)
    (Path(made["merged"].path) / "scratch.txt").write_text("not committed\n")
    async with Store.open(settings.db_path) as store:
        for name, state in (
            ("empty", AgentState.DONE),
            ("work", AgentState.KILLED),
            ("live", AgentState.RUNNING),
            ("merged", AgentState.DONE),
        ):
            await store.save_agent(
                Agent(
                    id=f"agent{name:0>11}", name=name, state=state, spec=AgentSpec(prompt="p"),
                    cwd=made[name].path, created_at=1.0, updated_at=1.0,
                    extra={"worktree": made[name].to_dict()},
                )
            )  # fmt: skip
    env = deck_env(tmp_path)

    listed = (await cli(env, "worktrees", "--json")).json()
    by_branch = {w["branch"]: w for w in listed}
    assert len(listed) == 5
    assert by_branch[made["empty"].branch]["empty"] is True
    assert by_branch[made["work"].branch]["unmerged"][0].endswith("work's work")
    assert by_branch[made["orphan"].branch]["agent_id"] is None
    assert by_branch[made["orphan"].branch]["merged"] is True
    assert by_branch[made["merged"].branch]["dirty"] == ["scratch.txt"]

    dry = await cli(env, "worktrees", "prune", "--dry-run")
    assert dry.code == 0, dry.err
    assert all(Path(w.path).exists() for w in made.values())

    pruned = await cli(env, "worktrees", "prune")
    assert pruned.code == 0, pruned.err
    assert f"removed {made['empty'].branch}" in pruned.out
    assert f"removed {made['orphan'].branch}" in pruned.out
    assert f"kept {made['live'].branch}: its agent is running" in pruned.out
    assert f"kept {made['work'].branch}: it holds work that is nowhere else" in pruned.out
    assert "work's work" in pruned.out and "uncommitted: scratch.txt" in pruned.out
    assert not Path(made["empty"].path).exists() and not Path(made["orphan"].path).exists()
    for name in ("work", "live", "merged"):
        assert Path(made[name].path).exists()
    assert made["work"].branch in git(repo, "branch", "--list", "agentdeck/*")

    forced = await cli(env, "worktrees", "prune", "--force")
    assert f"removed (losing 1 commit(s), 0 file(s)) {made['work'].branch}" in forced.out
    assert f"kept {made['live'].branch}: its agent is running" in forced.out
    assert not Path(made["work"].path).exists() and Path(made["live"].path).exists()
