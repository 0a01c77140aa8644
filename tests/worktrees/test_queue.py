"""The merge queue on real repositories: entries of one repository merge one at a
time in the order they came, each combined with the target as the one before left
it; a queued entry can be cancelled; the queue outlives the process that filled it;
the API, the CLI and the event log show it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.worktree import Worktree
from agentdeck.errors import Refused
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.store.merges import MergeStore
from tests.support.deckcli import deck as deck_cli
from tests.support.deckcli import deck_env
from tests.worktrees.conftest import git

pytestmark = pytest.mark.anyio

LINES = "".join(f"line {i}\n" for i in range(1, 21))


async def worker(
    store: Store, runner: Runner, repo: Path, name: str, edit: dict[int, str]
) -> Agent:
    """An agent (its row and its worktree) whose turn changed lines of ``shared.txt``;
    its profile has no sandbox, so its merge tests may note what they saw outside
    the scratch worktree (tests/security/test_merges.py holds them in one)."""
    agent_id = f"agent{name:0>11}"
    wt = await runner.worktrees.create(agent_id, name, repo, base="main")
    lines = (Path(wt.path) / "shared.txt").read_text().splitlines(keepends=True)
    for number, text in edit.items():
        lines[number - 1] = text + "\n"
    (Path(wt.path) / "shared.txt").write_text("".join(lines))
    await runner.worktrees.commit_wip(wt, f"{name}'s turn")
    agent = Agent(
        id=agent_id, name=name, state=AgentState.DONE,
        spec=AgentSpec(prompt="p", profile="permissive"), cwd=wt.path, created_at=1.0,
        updated_at=1.0, extra={"worktree": wt.to_dict()},
    )  # fmt: skip
    await store.save_agent(agent)
    return agent


@pytest.fixture
def shared_repo(tmp_path: Path) -> Path:
    from tests.worktrees.conftest import make_repo

    return make_repo(tmp_path / "repo", {"shared.txt": LINES})


async def test_one_repository_merges_one_entry_at_a_time_in_order_each_on_the_last(
    deck: tuple[Store, Runner], shared_repo: Path, tmp_path: Path
) -> None:
    store, runner = deck
    first = await worker(store, runner, shared_repo, "first", {1: "first was here"})
    second = await worker(store, runner, shared_repo, "second", {20: "second was here"})
    third = await worker(store, runner, shared_repo, "third", {10: "third was here"})
    log = tmp_path / "tests.log"
    # Each test run says when it starts and ends, and what it found of the others.
    test = f"echo start $(grep -c 'was here' shared.txt) >> {log}; sleep 0.3; echo end >> {log}"
    queued = [
        await runner.merge(a, test=test, wait=False, by="user:test") for a in (first, second, third)
    ]
    assert [e.state for e in queued] == [MergeState.QUEUED] * 3
    cancelled = await runner.merges.cancel(queued[2].id[:6], by="user:test")
    assert cancelled.state is MergeState.CANCELLED
    done = [await runner.merges.wait(e.id) for e in queued]

    assert [e.state for e in done] == [MergeState.LANDED, MergeState.LANDED, MergeState.CANCELLED]
    # Never two test runs at once; the second ran on what the first landed.
    assert log.read_text().split("\n") == ["start 1", "end", "start 2", "end", ""]
    assert git(shared_repo, "rev-parse", "main").strip() == done[1].commit
    text = (shared_repo / "shared.txt").read_text()
    assert "first was here" in text and "second was here" in text
    assert "third was here" not in text  # cancelled: never merged
    git(shared_repo, "merge-base", "--is-ancestor", str(done[0].commit), str(done[1].commit))
    with pytest.raises(Refused, match="not queued"):
        await runner.merges.cancel(queued[0].id, by="user:test")

    kinds = [
        (e.data["kind"], e.data["detail"].get("state"))
        for e in await store.read(agent_id=first.id)
        if e.type == "notice"
    ]
    assert kinds == [("merge_queued", "queued"), ("merge", "landed")]


async def test_a_merge_left_by_a_process_that_died_is_taken_again(
    deck: tuple[Store, Runner], shared_repo: Path
) -> None:
    store, runner = deck
    agent = await worker(store, runner, shared_repo, "orphan", {5: "orphan was here"})
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()
    wt = Worktree.from_extra(agent.extra)
    assert wt is not None
    records = MergeStore(store)
    for state in (MergeState.MERGING, MergeState.QUEUED):  # mid-merge, then one behind it
        await records.create(
            MergeEntry(
                id=f"mg{state}", agent_id=agent.id, repo=wt.repo, branch=wt.branch,
                target="main", strategy="merge", test="true", state=state, by="user:cli",
                enqueued_at=1.0 if state is MergeState.MERGING else 2.0, owner_pid=gone.pid,
            )
        )  # fmt: skip
    live = await records.create(
        MergeEntry(
            id="mglive", agent_id=agent.id, repo=wt.repo, branch=wt.branch, target="main",
            strategy="merge", test=None, state=MergeState.QUEUED, by="user:cli",
            enqueued_at=3.0, owner_pid=os.getppid(),  # a process that lives: its own
        )
    )  # fmt: skip
    taken = await runner.merges.recover()
    assert [e.id for e in taken] == ["mgmerging", "mgqueued"]
    first, then = [await runner.merges.wait(e.id) for e in taken]
    assert first.state is MergeState.LANDED and first.owner_pid == os.getpid()
    assert then.state is MergeState.REFUSED and then.reason
    assert then.reason.startswith("nothing to merge")  # the first had landed it
    assert (await records.get(live.id)).state is MergeState.QUEUED  # not this one's to take


async def test_the_api_queues_without_waiting_and_the_cli_shows_the_queue(
    settings: Settings, shared_repo: Path, tmp_path: Path
) -> None:
    from tests.support.served import serving

    env = deck_env(tmp_path)
    alone = await asyncio.to_thread(deck_cli, env, "merge", "anyone", "--no-wait")
    assert alone.code == 2 and "--no-wait needs the daemon" in alone.err
    async with serving(settings) as served, served.api() as api:
        store, runner = served.deck._store, served.deck._runner
        agent = await worker(store, runner, shared_repo, "api", {2: "api was here"})
        later = await worker(store, runner, shared_repo, "later", {12: "later was here"})
        gate = tmp_path / "release"
        held = f"while [ ! -e {gate} ]; do sleep 0.05; done; test -f shared.txt"
        answer = await api.post(
            f"/api/agents/{agent.id}/merge", params={"wait": "false"}, json={"test": held}
        )
        assert answer.status_code == 202, answer.text
        entry = answer.json()
        assert entry["state"] == "queued" and entry["landed"] is False
        behind = await api.post(
            f"/api/agents/{later.id}/merge", params={"wait": "false"}, json={"test": "true"}
        )
        listed = await asyncio.to_thread(deck_cli, env, "queue")
        assert listed.code == 0, listed.err
        lines = listed.out.splitlines()
        first, second = f"agentdeck/{agent.id}/api ", f"agentdeck/{later.id}/later "
        assert lines[0].strip().startswith(f"merging now  {entry['id'][:8]}  {first}")
        assert lines[2].strip().startswith(f"#2  {behind.json()['id'][:8]}  {second}")
        gate.touch()
        ended = await runner.merges.wait(entry["id"])
        assert ended.state is MergeState.LANDED
        one = await api.get(f"/api/merges/{entry['id'][:8]}")
        assert one.json()["commit"] == ended.commit and one.json()["state"] == "landed"
        await runner.merges.wait(behind.json()["id"])
        landed = await api.get("/api/merges", params={"state": "landed"})
        assert [m["id"] for m in landed.json()["merges"]] == [behind.json()["id"], entry["id"]]
        missing = await api.get("/api/merges/mgnosuchentry")
        assert missing.status_code == 404
        too_late = await api.post(f"/api/merges/{entry['id']}/cancel")
        assert too_late.status_code == 409 and "not queued" in too_late.text
        shown = await asyncio.to_thread(deck_cli, env, "queue", "--json")
        assert [m["state"] for m in json.loads(shown.out)] == ["landed", "landed"]
    after = await asyncio.to_thread(deck_cli, env, "queue")  # no daemon: from the store
    assert "nothing waiting to merge" in after.out and "landed on main" in after.out
