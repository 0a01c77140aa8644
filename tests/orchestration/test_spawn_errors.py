"""What a spawn refuses, in words the orchestrating model can act on; and the
limit of live agents on the deck, for agents started by hand too."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.orchestration.service import ToolError
from agentdeck.settings import Settings
from tests.orchestration.conftest import Team
from tests.web.conftest import running_daemon

pytestmark = pytest.mark.anyio


async def parent(team: Team, **spec: object) -> Agent:
    agent = Agent(
        id="aparent00000001",
        name="lead",
        state=AgentState.RUNNING,
        spec=AgentSpec(prompt="p", orchestrator=True, **spec),  # type: ignore[arg-type]
        cwd=str(team.tmp),
        created_at=1.0,
        updated_at=1.0,
    )
    await team.store.save_agent(agent)
    return agent


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workspace": "worktree"}, "is not in a git repository"),
        ({"workspace": "cloud"}, "workspace must be one of new, shared, worktree, not 'cloud'"),
        ({"template": "wizard"}, "no agent template with id 'wizard' (templates here: engineer"),
        ({"name": "../x"}, "cannot spawn: name '../x' must be letters"),
        ({"prompt": "  "}, "spawn_agent needs a prompt"),
    ],
)
async def test_a_refused_spawn_says_why(team: Team, kwargs: dict[str, str], message: str) -> None:
    lead = await parent(team)
    args = {"prompt": "do it", **kwargs}
    with pytest.raises(ToolError) as caught:
        await team.orch.spawn(lead.id, **args)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert await team.children(lead.id) == []


async def test_a_parent_with_no_budget_left_cannot_spawn(team: Team) -> None:
    lead = await parent(team, budget_usd=0.5)
    await team.store.save_agent(lead.with_changes(cost_usd=0.5))
    team.orch.budgets.nodes.clear()
    with pytest.raises(ToolError, match=r"spent or given to your other children \(\$0.00 left"):
        await team.orch.spawn(lead.id, "do it")


async def test_the_deck_refuses_agents_past_its_limit_with_409(
    settings: Settings, tmp_path: Path
) -> None:
    tight = settings.model_copy(update={"max_live_agents": 1})
    async with running_daemon(tight) as daemon, daemon.client() as api:
        first = await api.post("/api/agents", json={"prompt": "hello", "scenario": "chat"})
        assert first.status_code == 201, first.text
        second = await api.post("/api/agents", json={"prompt": "hello", "scenario": "chat"})
        assert second.status_code == 409
        error = second.json()["error"]
        assert error["message"].startswith("this deck already runs 1 agent, its limit")
        assert "AGENTDECK_MAX_LIVE_AGENTS=1" in error["message"]
        assert error["hint"].startswith("stop an agent or wait")
        listed = (await api.get("/api/agents")).json()["agents"]
        assert [a["id"] for a in listed] == [first.json()["id"]]


async def test_a_worker_in_a_worktree_branches_off_its_parents_repository(team: Team) -> None:
    from tests.worktrees.conftest import git, make_repo

    gate = "test: grep -q 2 calc.py\n"  # the repository's own merge test
    repo = make_repo(team.tmp / "repo", {"calc.py": "x = 1\n", ".agentdeck/merge.yaml": gate})
    lead = Agent(
        id="aparent00000002",
        name="lead",
        state=AgentState.RUNNING,
        spec=AgentSpec(prompt="p", orchestrator=True, scenario="chat"),
        cwd=str(repo),
        created_at=1.0,
        updated_at=1.0,
    )
    await team.store.save_agent(lead)
    child = await team.orch.spawn(lead.id, "do it", name="w1", workspace="worktree")
    worktree = child.extra["worktree"]
    assert child.cwd == worktree["path"] and worktree["repo"] == str(repo)
    assert worktree["branch"] == f"agentdeck/{child.id}/w1" and worktree["base"] == "main"
    assert git(repo, "rev-parse", worktree["branch"]) == git(repo, "rev-parse", "main")
    # The orchestrator reviews and lands its worker's work through its deck tools.
    from agentdeck.core.worktree import Worktree
    from agentdeck.orchestration.tools import call_tool

    work = Worktree.from_extra(child.extra)
    assert work is not None
    (Path(work.path) / "calc.py").write_text("x = 2\n")
    await team.runner.worktrees.commit_wip(work, "w1's turn")
    text, error = await call_tool(team.orch, lead.id, "diff_agent", {"agent": "w1"})
    assert not error and "calc.py  +1 -1" in text and "+x = 2" in text
    text, error = await call_tool(team.orch, lead.id, "merge_agent", {"agent": "w1"})
    assert not error and text.startswith("Landed: landed on main as "), text
    assert text.endswith("tests passed: grep -q 2 calc.py"), text
    assert (repo / "calc.py").read_text() == "x = 2\n"
    text, error = await call_tool(team.orch, lead.id, "diff_agent", {"agent": "nobody"})
    assert error and "you have no child agent 'nobody'" in text
