"""The test-gated merge on real repositories: only a tested commit lands, a failing
combination or a conflict is refused and the target stays, merges of one repository
are serialised, the gate comes from the target, and every outcome is recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.worktree import Worktree
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.merge import merge
from tests.support.deckcli import deck, deck_env
from tests.worktrees.conftest import git

pytestmark = pytest.mark.anyio


@pytest.fixture
def trees(tmp_path: Path) -> Worktrees:
    return Worktrees(tmp_path / "home" / "worktrees")


async def worker(trees: Worktrees, repo: Path, name: str, files: dict[str, str]) -> Worktree:
    """An agent's worktree with ``files`` written and committed at its turn's end."""
    wt = await trees.create(f"agent{name:0>11}", name, repo, base="main")
    for rel, content in files.items():
        (Path(wt.path) / rel).write_text(content)
    await trees.commit_wip(wt, f"{name}'s turn")
    return wt


def main_commit(repo: Path, files: dict[str, str], message: str) -> None:
    for rel, content in files.items():
        (repo / rel).write_text(content)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message)


FIXED = "def add(a, b):\n    return a + b\n"


async def test_a_passing_test_lands_exactly_the_tested_commit(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    main_commit(repo, {"docs.md": "docs\n"}, "main moves on meanwhile")
    test = "python3 -c 'import calc; assert calc.add(2, 3) == 5' && test -f docs.md"
    outcome = await merge(wt, scratch=tmp_path / "scratch", test=test)
    assert outcome.landed, outcome
    tip = git(repo, "rev-parse", "main").strip()
    assert outcome.commit == tip and outcome.reason.startswith(f"landed on main as {tip[:12]}")
    # main was checked out (clean) in the repository: its files followed.
    assert (repo / "calc.py").read_text() == FIXED and git(repo, "status", "--porcelain") == ""
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    assert len(parents) == 2  # a merge commit of the latest main and the branch
    assert not list((tmp_path / "scratch").iterdir())  # the scratch worktree is gone


async def test_a_combination_that_fails_its_tests_is_refused_and_main_stays(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    main_commit(repo, {"BROKEN": "x\n"}, "main breaks what the branch relies on")
    before = git(repo, "rev-parse", "main")
    test = "echo checking; test ! -e BROKEN || { echo 'BROKEN is there' >&2; exit 3; }"
    outcome = await merge(wt, scratch=tmp_path / "scratch", test=test)
    assert not outcome.landed
    assert outcome.reason == f"tests failed on {wt.branch} combined with main: {test}"
    assert "checking" in outcome.test_output and "BROKEN is there" in outcome.test_output
    assert git(repo, "rev-parse", "main") == before


async def test_a_conflict_is_refused_naming_the_file(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    main_commit(repo, {"calc.py": "def add(a, b):\n    return b + a\n"}, "main fixes it too")
    before = git(repo, "rev-parse", "main")
    for strategy in ("merge", "squash", "rebase"):
        outcome = await merge(wt, scratch=tmp_path / "scratch", strategy=strategy)  # type: ignore[arg-type]
        assert not outcome.landed and outcome.conflicts == ["calc.py"], strategy
        assert outcome.reason == "conflicts with main in calc.py"
    assert git(repo, "rev-parse", "main") == before


async def test_merges_of_one_repository_are_serialised_and_each_tested_on_the_last(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    # Both change calc.py, in different places: the second lands on top of the first.
    add_wrong, add_fixed = (
        "def add(a, b):\n    return a - b\n",
        "def add(a, b):\n    return a + b\n",
    )
    sub_wrong, sub_fixed = (
        "def sub(a, b):\n    return a + b\n",
        "def sub(a, b):\n    return a - b\n",
    )
    main_commit(repo, {"calc.py": f"{add_wrong}\n\n{sub_wrong}"}, "two functions, both wrong")
    left = await worker(trees, repo, "left", {"calc.py": f"{add_fixed}\n\n{sub_wrong}"})
    right = await worker(trees, repo, "right", {"calc.py": f"{add_wrong}\n\n{sub_fixed}"})
    test = "python3 -c 'import calc; print(calc.add(2, 3), calc.sub(3, 1))' >> ../tested.txt"
    outcomes = await asyncio.gather(
        merge(left, scratch=tmp_path / "scratch", test=test),
        merge(right, scratch=tmp_path / "scratch", test=test),
    )
    assert all(o.landed for o in outcomes), outcomes
    assert (repo / "calc.py").read_text() == f"{add_fixed}\n\n{sub_fixed}"
    # One at a time: the second was combined with, and tested on, the first's result.
    ran = (tmp_path / "scratch" / "tested.txt").read_text().splitlines()
    assert ran in (["5 4", "5 2"], ["-1 2", "5 2"])
    first, second = outcomes if ran[0] == "5 4" else outcomes[::-1]
    assert first.commit in git(repo, "log", "-1", "--format=%P", second.commit or "").split()


async def test_squash_and_rebase_land_linear_history(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    squashed = await worker(trees, repo, "squashy", {"a.txt": "a\n"})
    (Path(squashed.path) / "b.txt").write_text("b\n")
    await trees.commit_wip(squashed, "second commit")
    tip = git(repo, "rev-parse", "main").strip()
    outcome = await merge(
        squashed, scratch=tmp_path / "s", strategy="squash", message="squashy's work"
    )
    assert outcome.landed
    assert git(repo, "log", "-1", "--format=%P %s", "main").split(" ", 1) == [
        tip,
        "squashy's work\n",
    ]
    rebased = await worker(trees, repo, "rebasy", {"c.txt": "c\n"})
    outcome = await merge(rebased, scratch=tmp_path / "s", strategy="rebase")
    assert outcome.landed
    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "rebasy's turn"
    assert len(git(repo, "log", "-1", "--format=%P", "main").split()) == 1


async def test_the_gate_is_the_targets_not_the_branchs(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    (repo / ".agentdeck").mkdir()
    main_commit(repo, {".agentdeck/merge.yaml": "test: test -f APPROVED\n"}, "a merge gate")
    wt = await trees.create("agentcheater1", "cheater", repo)
    (Path(wt.path) / ".agentdeck" / "merge.yaml").write_text("test: 'true'\n")
    await trees.commit_wip(wt, "lower the bar")
    outcome = await merge(wt, scratch=tmp_path / "s")
    # Refused before any test: a branch that changes the gate lands only by hand.
    assert not outcome.landed and outcome.test is None
    assert "changes .agentdeck/merge.yaml" in outcome.reason and "by hand" in outcome.reason
    assert git(repo, "show", "main:.agentdeck/merge.yaml") == "test: test -f APPROVED\n"
    nothing = await merge(await trees.create("agentidle0001", "idle", repo), scratch=tmp_path / "s")
    assert not nothing.landed and nothing.reason.startswith("nothing to merge")


async def test_the_cli_lands_or_refuses_and_the_log_and_the_audit_say_so(
    settings: Settings, tmp_path: Path, repo: Path
) -> None:
    settings.ensure_home()
    trees = Worktrees(settings.worktrees_dir)
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    async with Store.open(settings.db_path) as store:
        await store.save_agent(
            Agent(
                id="agent00000fixer", name="fixer", state=AgentState.DONE,
                spec=AgentSpec(prompt="p"), cwd=wt.path, created_at=1.0, updated_at=1.0,
                extra={"worktree": wt.to_dict()},
            )
        )  # fmt: skip
    env = deck_env(tmp_path)
    failing = await asyncio.to_thread(deck, env, "merge", "fixer", "--test", "exit 1")
    assert failing.code == 1 and failing.out.startswith("refused: tests failed on")
    landed = await asyncio.to_thread(deck, env, "merge", "fixer", "--json", "--test", "true")
    assert landed.code == 0, landed.err
    assert json.loads(landed.out)["commit"] == git(repo, "rev-parse", "main").strip()
    async with Store.open(settings.db_path) as store:
        notices = [e.data for e in await store.read(agent_id="agent00000fixer")]
        audit = await store.read_audit(agent_id="agent00000fixer")
    assert [n["detail"]["landed"] for n in notices if n["kind"] == "merge"] == [False, True]
    assert [(a.tool, str(a.decision)) for a in audit] == [("merge", "denied"), ("merge", "allowed")]
    assert audit[1].answered_by == "user:cli"


async def test_a_merge_with_nothing_to_test_needs_no_checkout(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    main_commit(repo, {"docs.md": "docs\n"}, "main moves on meanwhile")
    outcome = await merge(wt, scratch=tmp_path / "scratch", message="land fixer")
    assert outcome.landed, outcome
    assert not (tmp_path / "scratch").exists()  # combined in git's object store alone
    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "land fixer"
    assert len(git(repo, "log", "-1", "--format=%P", "main").split()) == 2
    assert (repo / "calc.py").read_text() == FIXED and (repo / "docs.md").exists()


async def test_a_malformed_merge_gate_is_a_clear_error_and_nothing_moves(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    from agentdeck.errors import WorktreeError

    (repo / ".agentdeck").mkdir()
    main_commit(repo, {".agentdeck/merge.yaml": "test: [unclosed\n"}, "a broken gate")
    wt = await worker(trees, repo, "fixer", {"calc.py": FIXED})
    before = git(repo, "rev-parse", "main")
    with pytest.raises(WorktreeError, match=r"\.agentdeck/merge\.yaml: "):
        await merge(wt, scratch=tmp_path / "s")
    main_commit(repo, {".agentdeck/merge.yaml": "test: [1, 2]\n"}, "a gate that is no command")
    with pytest.raises(WorktreeError, match="test must be a command line"):
        await merge(wt, scratch=tmp_path / "s")
    with pytest.raises(WorktreeError, match="has no branch 'nope' to merge into"):
        await merge(wt, scratch=tmp_path / "s", into="nope")
    assert git(repo, "rev-parse", "HEAD~1") == before


async def test_bad_merge_and_diff_requests_say_what_is_wrong(
    settings: Settings, tmp_path: Path
) -> None:
    from tests.support.served import serving

    env = deck_env(tmp_path)
    unknown = await asyncio.to_thread(deck, env, "diff", "no-such-agent")
    assert unknown.code == 1 and "no agent" in unknown.err and "no-such-agent" in unknown.err
    bogus = await asyncio.to_thread(deck, env, "merge", "x", "--strategy", "octopus")
    assert bogus.code == 2 and "--strategy must be one of merge, squash, rebase" in bogus.err
    async with serving(settings) as served, served.api() as api:
        missing = await api.post("/api/agents/no-such-agent/merge", json={})
        assert missing.status_code == 404
        plain = await api.post(
            "/api/agents", json={"prompt": "hi", "scenario": "chat", "keep_alive": False}
        )
        agent_id = plain.json()["id"]
        typo = await api.post(f"/api/agents/{agent_id}/merge", json={"strategy": "octopus"})
        assert typo.status_code == 422
        refused = await api.post(f"/api/agents/{agent_id}/merge", json={})
        assert refused.status_code == 400 and "has no worktree" in refused.text
