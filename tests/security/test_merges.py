"""Door 3: the merge test. A model never chooses the command a merge runs; the
command (a person's, or the target's ``.agentdeck/merge.yaml``) runs the agent's
code in the agent's sandbox, not as the daemon; what it prints is scrubbed before
anyone sees it; and a test left running by a daemon killed with SIGKILL is killed,
its scratch worktree removed, before the merge is tried again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.worktree import Worktree
from agentdeck.errors import Refused
from agentdeck.orchestration.tools import SCHEMAS, call_tool, handlers
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.merges import MergeStore
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.merge import merge
from agentdeck.worktrees.merge_test import RECORD, note_scratch
from tests.orchestration.conftest import Team, make_team
from tests.sandbox.conftest import HAS_BWRAP, needs_bwrap, no_bwrap  # noqa: F401 - a fixture
from tests.support.daemonproc import Daemon, daemons  # noqa: F401 - a fixture
from tests.support.deckcli import deck_env
from tests.support.waiting import eventually
from tests.worktrees.conftest import git, make_repo

pytestmark = pytest.mark.anyio

# Secrets a hostile branch prints from its test: each has a shape the scrubber knows.
PLANTED = {
    "anthropic": "sk-ant-api03-" + "Q7xWm2Rk9Lp4Vt8Zc3Hb6Nd1Fg5Js0Ya" * 3 + "AA",
    "aws": "AKIA" + "Z7Q4W2M9K3L8P5R6",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
    "AAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ\n-----END OPENSSH PRIVATE KEY-----",
}


@pytest.fixture
async def team(settings: Settings, tmp_path: Path) -> AsyncIterator[Team]:
    async with make_team(settings, tmp_path) as made:
        yield made


@pytest.fixture
def outside() -> Iterator[Path]:
    """A place the sandbox sees (read-only) but must not write: outside ``/tmp``,
    which a sandbox has its own of, so a write there would prove nothing."""
    for parent in ("/var/tmp", str(Path.home())):
        if os.access(parent, os.W_OK):
            place = Path(tempfile.mkdtemp(prefix="agentdeck-outside-", dir=parent))
            break
    else:  # pragma: no cover - every CI machine has /var/tmp
        pytest.skip("no writable place outside /tmp")
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)


def gated_repo(path: Path, test: str, files: dict[str, str] | None = None) -> Path:
    """A repository whose ``main`` says, in ``.agentdeck/merge.yaml``, what a
    merge into it must pass."""
    return make_repo(
        path,
        {"calc.py": "x = 1\n", ".agentdeck/merge.yaml": f"test: {test!r}\n", **(files or {})},
    )


async def worker(
    store: Store, trees: Worktrees, repo: Path, files: dict[str, str], *, profile: str | None
) -> Agent:
    """A worker's row and worktree, with ``files`` committed on its branch (what a
    hostile agent wrote: the code the merge's test will run)."""
    agent_id = "aworker" + uuid.uuid4().hex[:8]
    wt = await trees.create(agent_id, "w1", repo, base="main")
    for rel, content in files.items():
        (Path(wt.path) / rel).write_text(content)
    await trees.commit_wip(wt, "w1's turn")
    agent = Agent(
        id=agent_id, name="w1", state=AgentState.DONE,
        spec=AgentSpec(prompt="p", profile=profile), cwd=wt.path, created_at=1.0,
        updated_at=1.0, extra={"worktree": wt.to_dict()},
    )  # fmt: skip
    await store.save_agent(agent)
    return agent


def raw_rows(settings: Settings) -> str:
    """Every merge row as the database file holds it (not as the store reads it)."""
    with contextlib.closing(sqlite3.connect(settings.db_path)) as db:
        rows = db.execute("SELECT test, reason, outcome FROM merges").fetchall()
    return repr(rows)


# -- a model never chooses the command -------------------------------------------------


@pytest.mark.cli
async def test_a_hostile_orchestrator_cannot_choose_or_lower_the_merge_test(
    team: Team, tmp_path: Path
) -> None:
    marker = tmp_path / "the-model-ran-this"
    repo = gated_repo(tmp_path / "repo", "exit 1")  # nothing lands here, says the repository
    before = git(repo, "rev-parse", "main")
    hostile = {"agent": "w1", "test": f"touch {marker}; echo ok"}
    scenario = team.scenario(
        {
            "name": "hostile-merge",
            "turns": [
                {
                    "reply": [
                        {
                            "tool_use": {
                                "name": "mcp__deck__spawn_agent",
                                "input": {
                                    "prompt": "TASK-W1",
                                    "template": "engineer",
                                    "name": "w1",
                                    "workspace": "worktree",
                                },  # fmt: skip
                            }
                        }
                    ]
                },
                {
                    "reply": [
                        {
                            "tool_use": {
                                "name": "mcp__deck__wait_for_agents",
                                "input": {"agents": ["w1"]},
                            }
                        }  # fmt: skip
                    ]
                },
                {
                    "when": {"tool_result_contains": "wait_for_agents: done"},
                    "reply": [{"tool_use": {"name": "mcp__deck__merge_agent", "input": hostile}}],
                },
                {
                    "reply": [
                        {"tool_use": {"name": "mcp__deck__merge_agent", "input": {"agent": "w1"}}}
                    ]
                },  # fmt: skip
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-W1"},
                    "turns": [
                        {
                            "reply": [
                                {
                                    "tool_use": {
                                        "name": "Write",
                                        "input": {
                                            "file_path": "w1.txt",
                                            "content": "w1 was here\n",
                                        },
                                    }
                                }
                            ]
                        },  # fmt: skip
                        {"reply": [{"text": "W1-DONE"}]},
                    ],
                }
            ],
        }
    )
    lead = (await team.lead(scenario, cwd=str(repo))).agent
    done = await team.settled(lead.id, timeout=180)
    assert done.extra.get("last_result") == "LEAD-DONE", done.extra

    chosen, plain = await team.tool_results(lead.id, "merge_agent")
    # Refused before the deck's handler: the tool's schema has no such argument.
    assert "Additional properties are not allowed ('test' was unexpected)" in chosen, chosen
    assert not marker.exists()  # the model's command never ran
    # Without one, the repository's own gate holds: exit 1, so nothing lands.
    assert plain.startswith("Refused: tests failed on agentdeck/"), plain
    assert plain.split("\n")[0].endswith("combined with main: exit 1")
    assert git(repo, "rev-parse", "main") == before
    entries = await team.runner.merges.records.list_merges()
    assert [(e.state, e.test, e.by) for e in entries] == [
        (MergeState.REFUSED, None, f"agent:{lead.id}")
    ]


async def test_the_tool_refuses_a_command_wherever_the_call_comes_from(
    team: Team, tmp_path: Path
) -> None:
    """The daemon's route for ``agentdeck mcp --orchestrate`` (and any API caller
    acting as an agent) checks the arguments against the same schema."""
    assert set(SCHEMAS["merge_agent"][1]["properties"]) == {"agent"}
    marker = tmp_path / "ran"
    repo = gated_repo(tmp_path / "repo", "true")
    lead = Agent(
        id="alead0000000001", name="lead", state=AgentState.RUNNING,
        spec=AgentSpec(prompt="p", orchestrator=True, scenario="chat"), cwd=str(repo),
        created_at=1.0, updated_at=1.0,
    )  # fmt: skip
    await team.store.save_agent(lead)
    child = await team.orch.spawn(lead.id, "do it", name="w1", workspace="worktree")
    work = Worktree.from_extra(child.extra)
    assert work is not None
    (Path(work.path) / "w1.txt").write_text("w1\n")
    await team.runner.worktrees.commit_wip(work, "w1's turn")
    for args in ({"agent": "w1", "test": f"touch {marker}"}, {"agent": "w1", "test": None}):
        text, error = await call_tool(team.orch, lead.id, "merge_agent", args)
        assert error and "test" in text, text
    # Past the schema (a caller that skips it), the handler itself refuses.
    with pytest.raises(Refused, match="merge_agent takes only the agent, not test"):
        await handlers(team.orch, lead.id)["merge_agent"]({"agent": "w1", "test": str(marker)})
    assert not marker.exists()
    assert await team.runner.merges.records.list_merges() == []  # nothing even queued


# -- the test runs in the agent's sandbox ------------------------------------------


@needs_bwrap
async def test_a_branch_whose_test_reaches_out_is_held_by_the_agents_sandbox(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path, outside: Path
) -> None:
    """``pytest`` runs the branch's ``conftest.py``: here the gate runs the
    branch's ``check.sh``, which tries the deck's token, a write outside, the
    repository's hooks and its target branch; the default profile's sandbox holds."""
    store, runner = deck
    token = settings.home_dir / "token"
    token.write_text("DECK-TOKEN-" + uuid.uuid4().hex + "\n")
    repo = gated_repo(tmp_path / "repo", "sh check.sh")
    git_dir = repo / ".git"
    before = git(repo, "rev-parse", "main")
    check = f"""
if cat {token} >/dev/null 2>&1; then echo TOKEN-READ; else echo TOKEN-HIDDEN; fi
if {{ echo pwned > {outside}/escaped; }} 2>/dev/null; then echo WROTE-OUTSIDE; else echo HELD; fi
if {{ echo x > {git_dir}/hooks/post-merge; }} 2>/dev/null; then echo HOOKED; else echo NO-HOOK; fi
if git update-ref refs/heads/main HEAD 2>/dev/null; then echo MOVED; else echo NOT-MOVED; fi
git log --oneline -1 >/dev/null && echo GIT-READS
echo inside > made-here && echo SCRATCH-WRITABLE
exit 1
"""
    agent = await worker(store, runner.worktrees, repo, {"check.sh": check}, profile=None)
    entry = await runner.merge(agent, by="user:test")

    assert entry.state is MergeState.REFUSED, entry
    said = str(entry.outcome["test_output"]).split()
    assert said == ["TOKEN-HIDDEN", "HELD", "NO-HOOK", "NOT-MOVED", "GIT-READS",
                    "SCRATCH-WRITABLE"]  # fmt: skip
    assert not (outside / "escaped").exists()
    assert not (git_dir / "hooks" / "post-merge").exists()
    assert git(repo, "rev-parse", "main") == before


async def test_a_required_sandbox_that_cannot_be_given_refuses_the_merge(
    deck: tuple[Store, Runner],
    tmp_path: Path,
    no_bwrap: str,  # noqa: F811 - the fixture
) -> None:
    store, runner = deck
    marker = tmp_path / "ran-unsandboxed"
    repo = gated_repo(tmp_path / "repo", f"touch {marker}")
    before = git(repo, "rev-parse", "main")
    agent = await worker(store, runner.worktrees, repo, {"w1.txt": "w1\n"}, profile="strict")
    entry = await runner.merge(agent, by="user:test")
    assert entry.state is MergeState.REFUSED, entry
    assert entry.reason is not None
    assert entry.reason.startswith("not tested, so not merged: the profile 'strict' asks for a"), (
        entry
    )
    assert "bwrap" in entry.reason or "bubblewrap" in entry.reason
    assert not marker.exists()
    assert git(repo, "rev-parse", "main") == before


async def test_the_daemons_credentials_stay_out_of_a_merge_tests_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "AGENTDECK_SLACK_BOT_TOKEN", "MY_SERVICE_TOKEN",
                 "DB_PASSWORD", "SSH_AUTH_SOCK"):  # fmt: skip
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("MERGE_TEST_SEES_THIS", "1")
    trees = Worktrees(tmp_path / "home" / "worktrees")
    repo = gated_repo(tmp_path / "repo", "env | cut -d= -f1; exit 1")
    wt = await trees.create("aworker00000002", "w1", repo, base="main")
    (Path(wt.path) / "w1.txt").write_text("w1\n")
    await trees.commit_wip(wt, "w1's turn")
    names = set((await merge(wt, scratch=tmp_path / "scratch")).test_output.split())
    assert {"PATH", "MERGE_TEST_SEES_THIS"} <= names
    assert not names & {"ANTHROPIC_API_KEY", "AGENTDECK_SLACK_BOT_TOKEN", "MY_SERVICE_TOKEN",
                        "DB_PASSWORD", "SSH_AUTH_SOCK"}  # fmt: skip


# -- what a test prints is scrubbed ----------------------------------------------------


async def test_secrets_a_failing_test_prints_reach_neither_the_store_nor_the_model(
    team: Team, settings: Settings, tmp_path: Path
) -> None:
    token = "DECK-TOKEN-" + uuid.uuid4().hex
    (settings.home_dir / "token").write_text(token + "\n")
    loot = "\n".join([*PLANTED.values(), token, "the end of the loot"]) + "\n"
    # The profile without a sandbox: what the test can read, it prints.
    repo = gated_repo(tmp_path / "repo", "cat loot.txt; exit 1")
    lead = Agent(
        id="alead0000000002", name="lead", state=AgentState.RUNNING,
        spec=AgentSpec(prompt="p", orchestrator=True, scenario="chat", profile="permissive"),
        cwd=str(repo), created_at=1.0, updated_at=1.0,
    )  # fmt: skip
    await team.store.save_agent(lead)
    child = await team.orch.spawn(lead.id, "do it", name="w1", workspace="worktree")
    work = Worktree.from_extra(child.extra)
    assert work is not None
    (Path(work.path) / "loot.txt").write_text(loot)
    await team.runner.worktrees.commit_wip(work, "w1's turn")

    text, error = await call_tool(team.orch, lead.id, "merge_agent", {"agent": "w1"})
    assert not error and text.startswith("Refused: tests failed"), text
    assert "the end of the loot" in text  # the output is there: only its secrets are not
    (entry,) = await team.runner.merges.records.list_merges()
    stored, events = raw_rows(settings), repr(await team.events(child.id))
    for kind, secret in [*PLANTED.items(), ("deck token", token)]:
        for where, said in (("tool result", text), ("merges row", stored), ("log", events)):
            assert secret not in said, f"the {kind} is in the {where}"
    assert "the end of the loot" in str(entry.outcome["test_output"])
    assert "[REDACTED" in str(entry.outcome["test_output"])


# -- a test outlives nothing ------------------------------------------------------------


def marked(mark: str) -> list[psutil.Process]:
    """The live processes whose command line carries ``mark``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and any(
                mark in part for part in proc.info["cmdline"] or ()
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def test_a_merge_test_left_by_a_daemon_killed_with_sigkill_is_killed_before_the_retry(
    daemons: list[Daemon],  # noqa: F811 - the fixture
    settings: Settings,
    tmp_path: Path,
) -> None:
    mark = f"MERGE-MARK-{uuid.uuid4().hex[:12]}"
    slow = f"{sys.executable} -c 'import time; time.sleep(600)' {mark}"
    repo = gated_repo(tmp_path / "repo", slow)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    try:
        agent = await worker(
            store, Worktrees(settings.worktrees_dir), repo, {"w1.txt": "w1\n"}, profile=None
        )
    finally:
        await store.close()
    env = deck_env(tmp_path)
    try:
        await _killed_and_taken_again(daemons, env, settings, repo, agent, mark)
    finally:  # whatever failed, no test of ours runs on
        for proc in marked(mark):
            with contextlib.suppress(psutil.Error):
                proc.kill()


async def _killed_and_taken_again(
    daemons: list[Daemon],  # noqa: F811 - the fixture's list
    env: dict[str, str],
    settings: Settings,
    repo: Path,
    agent: Agent,
    mark: str,
) -> None:
    first = await Daemon(env).start()
    daemons.append(first)
    async with first.api() as api:
        queued = await api.post(f"/api/agents/{agent.id}/merge", params={"wait": "false"}, json={})
        assert queued.status_code == 202, queued.text
    entry_id = queued.json()["id"]

    async def running() -> list[psutil.Process] | None:
        return marked(mark) or None

    left = await eventually(running, timeout=60, what="the merge test to run")
    scratch_root = settings.worktrees_dir / ".merges"
    assert [p.name for p in scratch_root.iterdir()]  # its scratch worktree
    assert first.proc is not None
    first.proc.kill()  # SIGKILL: nothing of the daemon's runs after this
    first.proc.wait(timeout=30)
    assert any(p.is_running() for p in left)  # the test outlived it: an orphan now

    # main's gate changes meanwhile; the next daemon takes the merge again.
    (repo / ".agentdeck" / "merge.yaml").write_text("test: 'true'\n")
    git(repo, "commit", "--quiet", "-am", "a quicker gate")
    second = await Daemon(env).start()
    daemons.append(second)
    async with second.api() as api:

        async def ended() -> dict[str, object] | None:
            found = (await api.get(f"/api/merges/{entry_id}")).json()
            return found if found["state"] not in ("queued", "merging") else None

        outcome = await eventually(ended, timeout=60, what="the merge taken again")
    assert outcome["state"] == "landed", outcome
    assert marked(mark) == []  # killed before the retry began
    assert list(scratch_root.iterdir()) == []
    assert "merge-" not in git(repo, "worktree", "list", "--porcelain")
    assert not (repo / ".git" / RECORD).exists()


async def test_a_stop_mid_test_kills_the_test_and_removes_its_scratch_worktree(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    """A daemon that stops cancels its merges: each test's whole tree goes with it
    (in the sandbox, where the profile has one: bubblewrap's inner processes too,
    even when the stop comes as bubblewrap starts, making them: a stop as soon as
    the test's first process shows, several times)."""
    store, runner = deck
    mark = f"MERGE-MARK-{uuid.uuid4().hex[:12]}"
    repo = gated_repo(tmp_path / "repo", f"sh -c 'sleep 600; echo {mark}' {mark}")
    agent = await worker(store, runner.worktrees, repo, {"w1.txt": "w1\n"}, profile=None)

    async def running() -> list[psutil.Process] | None:
        return marked(mark) or None

    try:
        for _ in range(5):
            entry = await runner.merge(agent, by="user:test", wait=False)
            await eventually(running, timeout=60, what="the merge test to start")
            async with asyncio.timeout(30):
                await runner.merges.close()
            assert marked(mark) == []
            assert list((settings.worktrees_dir / ".merges").iterdir()) == []
            assert not (repo / ".git" / RECORD).exists()
            # Still merging: the next start takes it again.
            assert (await runner.merges.records.get(entry.id)).state is MergeState.MERGING
    finally:
        for proc in marked(mark):
            with contextlib.suppress(psutil.Error):
                proc.kill()


async def test_a_new_daemon_clears_what_a_crash_left_even_for_a_merge_it_cannot_take(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    """The agent of a merge left ``merging`` is gone: the merge fails, but the
    test its dead owner left running is killed and its scratch worktree removed."""
    store, runner = deck
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    scratch = tmp_path / "scratch" / "merge-left"
    git(repo, "worktree", "add", "--quiet", "--detach", str(scratch), "main")
    record = repo / ".git" / RECORD
    orphan = await asyncio.create_subprocess_exec("sleep", "600", start_new_session=True)
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()
    try:
        note_scratch(record, scratch)
        started = psutil.Process(orphan.pid).create_time()
        data = json.loads(record.read_text())
        record.write_text(json.dumps({**data, "pid": orphan.pid, "started": started}))
        await MergeStore(store).create(
            MergeEntry(
                id="mgleft", agent_id="agone0000000001", repo=str(repo),
                branch="agentdeck/gone", target="main", strategy="merge", test=None,
                state=MergeState.MERGING, by="user:cli", enqueued_at=1.0, owner_pid=gone.pid,
            )
        )  # fmt: skip
        (taken,) = await runner.merges.recover()
        assert await asyncio.wait_for(orphan.wait(), 10) == -9
        assert not scratch.exists() and not record.exists()
        ended = await runner.merges.wait(taken.id)
        assert ended.state is MergeState.FAILED and "is gone" in str(ended.reason)
    finally:
        with contextlib.suppress(ProcessLookupError):
            orphan.kill()
        await orphan.wait()


async def test_what_a_test_leaves_in_the_background_ends_with_it(tmp_path: Path) -> None:
    mark = f"MERGE-MARK-{uuid.uuid4().hex[:12]}"
    trees = Worktrees(tmp_path / "home" / "worktrees")
    repo = gated_repo(tmp_path / "repo", f"sh -c 'sleep 600' {mark} >/dev/null 2>&1 & true")
    wt = await trees.create("aworker00000003", "w1", repo, base="main")
    (Path(wt.path) / "w1.txt").write_text("w1\n")
    await trees.commit_wip(wt, "w1's turn")
    try:
        assert (await merge(wt, scratch=tmp_path / "scratch")).landed

        async def gone() -> bool:  # SIGKILL is sent; its exit may take a moment
            return not marked(mark)

        await eventually(gone, timeout=10, what="the test's background process to end")
    finally:
        for proc in marked(mark):
            with contextlib.suppress(psutil.Error):
                proc.kill()


async def test_the_next_merge_kills_only_the_process_a_record_names(
    tmp_path: Path,
) -> None:
    """A crash's record: the recorded process (same pid, same start time) is
    killed and the scratch worktree removed; a pid since reused is left alone; a
    test whose pid was never noted is found working in the scratch worktree."""
    trees = Worktrees(tmp_path / "home" / "worktrees")
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    wt = await trees.create("aworker00000001", "w1", repo, base="main")
    (Path(wt.path) / "w1.txt").write_text("w1\n")
    await trees.commit_wip(wt, "w1's turn")
    record = repo / ".git" / RECORD
    scratch = tmp_path / "scratch"
    left_scratch = scratch / "merge-left"
    git(repo, "worktree", "add", "--quiet", "--detach", str(left_scratch), "main")
    unnoted_scratch = scratch / "merge-unnoted"
    git(repo, "worktree", "add", "--quiet", "--detach", str(unnoted_scratch), "main")
    orphan = await asyncio.create_subprocess_exec("sleep", "600", start_new_session=True)
    innocent = await asyncio.create_subprocess_exec("sleep", "600", start_new_session=True)
    unnoted = await asyncio.create_subprocess_exec(
        "sleep", "600", cwd=unnoted_scratch, start_new_session=True
    )
    try:
        note_scratch(record, left_scratch)
        data = json.loads(record.read_text())
        started = psutil.Process(orphan.pid).create_time()
        record.write_text(json.dumps({**data, "pid": orphan.pid, "started": started}))
        outcome = await merge(wt, scratch=scratch)
        assert outcome.landed, outcome
        assert await asyncio.wait_for(orphan.wait(), 10) == -9
        assert not left_scratch.exists() and not record.exists()
        assert "merge-left" not in git(repo, "worktree", "list", "--porcelain")

        # A record naming a pid whose process started later: not the test it names.
        note_scratch(record, scratch / "merge-gone")
        data = json.loads(record.read_text())
        record.write_text(json.dumps({**data, "pid": innocent.pid, "started": time.time() - 3600}))
        (Path(wt.path) / "w1.txt").write_text("w1 again\n")
        await trees.commit_wip(wt, "w1's next turn")
        assert (await merge(wt, scratch=scratch)).landed
        assert innocent.returncode is None and psutil.pid_exists(innocent.pid)
        assert not record.exists()

        # Killed after the scratch was noted, before the test's pid was.
        assert psutil.Process(unnoted.pid).status() != psutil.STATUS_ZOMBIE  # not taken yet
        note_scratch(record, unnoted_scratch)
        (Path(wt.path) / "w1.txt").write_text("w1 once more\n")
        await trees.commit_wip(wt, "w1's last turn")
        assert (await merge(wt, scratch=scratch)).landed
        assert await asyncio.wait_for(unnoted.wait(), 10) == -9
        assert not unnoted_scratch.exists()
    finally:
        for proc in (orphan, innocent, unnoted):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
