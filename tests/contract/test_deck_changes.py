"""What agents changed, through both implementations of the Deck interface: an
agent in a worktree of a real repository edits a file and writes one (the real
Claude Code CLI on the scripted model); its diff (secrets scrubbed), its
checkpoints, rewinds dry and real, the test-gated merge queue, and the refusals:
unknown refs, bad values, hostile branch names and test commands."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.checkpoint import ChangedFile, Checkpoint, Rewind
from agentdeck.core.deck import Deck
from agentdeck.core.merge_queue import PENDING, MergeEntry, MergeState
from agentdeck.core.worktree import WorktreeDiff
from agentdeck.errors import NotFound, Refused, UsageError, WorktreeError
from tests.contract.helpers import idle_after, settled, unique
from tests.support.waiting import eventually
from tests.worktrees.conftest import git, make_repo

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

WRONG = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
FILES = {"calc.py": WRONG, "README.md": "# calc\n"}
# A token the scrubber knows: a viewer never sees it in a patch.
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
MERGE_SECONDS = 120.0


def scenario(root: Path, name: str, *, fix: bool = True) -> Path:
    """Fix add() in calc.py (Edit) unless not ``fix``, write ``<name>.md`` (Write),
    then say so: a checkpoint before each of the two calls."""
    calls = [{"name": "Write", "input": {"file_path": f"{name}.md", "content": f"key {SECRET}\n"}}]
    if fix:
        edit = {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        calls.insert(0, {"name": "Edit", "input": edit})
    turns = [{"reply": [{"tool_use": call}]} for call in calls]
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "turns": [*turns, {"reply": [{"text": "ok"}]}]}))
    return path


async def worker(
    deck: Deck, repo: Path, root: Path, *, fix: bool = True, profile: str | None = None
) -> Agent:
    """An agent in a worktree of ``repo`` that did its one turn and ended; its merge
    tests run in its profile's sandbox (none for ``permissive``)."""
    name = unique("fixer")
    spec = AgentSpec(
        prompt="fix add", name=name, cwd=str(repo), workspace="worktree",
        scenario=str(scenario(root, name, fix=fix)), profile=profile,
    )  # fmt: skip
    agent = await deck.create_agent(spec, keep_alive=False)
    return await settled(deck, agent.id, lambda a: a.state is AgentState.DONE)


async def test_a_worktree_diff_says_what_changed_with_its_secrets_scrubbed(
    deck: Deck, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    agent = await worker(deck, repo, tmp_path)
    changes = await deck.diff(agent.id)
    branch = agent.extra["worktree"]["branch"]
    assert (changes.agent_id, changes.branch, changes.base) == (agent.id, branch, "main")
    notes = f"{agent.name}.md"
    assert {f.path: (f.added, f.removed) for f in changes.files} == {
        "calc.py": (1, 1), notes: (1, 0),
    }  # fmt: skip
    assert "+    return a + b" in changes.patch and "[REDACTED:github-token]" in changes.patch
    assert SECRET not in changes.patch
    assert WorktreeDiff.from_dict(changes.to_dict()) == changes
    files_only = await deck.diff(agent.name or "", patch=False)
    assert (files_only.files, files_only.patch) == (changes.files, "")
    main = git(repo, "rev-parse", "main").strip()
    assert (await deck.diff(agent.id, against="main")).against == main == changes.against

    with pytest.raises(WorktreeError):
        await deck.diff(agent.id, against="no-such-ref")
    for missing in ("no-such-agent", ""):
        with pytest.raises(NotFound):
            await deck.diff(missing)
    plain = await deck.create_agent(AgentSpec(prompt="hi", name=unique("plain"), scenario="chat"))
    await settled(deck, plain.id, idle_after(1))
    with pytest.raises(WorktreeError, match="has no worktree"):
        await deck.diff(plain.id)
    await deck.kill(plain.id)


async def test_checkpoints_and_rewinds_dry_and_real(deck: Deck, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    agent = await worker(deck, repo, tmp_path)
    work, notes = Path(agent.cwd), f"{agent.name}.md"

    found = await deck.checkpoints(agent.id)
    assert [(c.n, c.tool) for c in found] == [(1, "Edit"), (2, "Write")]
    assert found[1].files == [ChangedFile("M", "calc.py")]  # the Edit's doing
    assert [Checkpoint.from_dict(c.to_dict()) for c in found] == found
    assert await deck.checkpoints(agent.name or "") == found

    dry = await deck.rewind(agent.id, to=1, dry_run=True)
    assert (dry.to, dry.dry_run, dry.undo) == (1, True, None)
    assert (dry.restored, dry.removed) == (["calc.py"], [notes])
    assert "-    return a + b" in dry.patch and "+    return a - b" in dry.patch
    assert SECRET not in dry.patch and "[REDACTED:github-token]" in dry.patch
    assert Rewind.from_dict(dry.to_dict()) == dry
    assert (work / "calc.py").read_text() == FIXED and (work / notes).exists()  # unchanged

    done = await deck.rewind(agent.name or "", to=1)
    assert (done.dry_run, done.restored, done.removed, done.patch) == (
        False, ["calc.py"], [notes], "",
    )  # fmt: skip
    assert done.undo == 3  # taken just before
    assert (work / "calc.py").read_text() == WRONG and not (work / notes).exists()
    undone = await deck.rewind(agent.id, to=done.undo)
    assert (work / "calc.py").read_text() == FIXED and (work / notes).exists()
    assert undone.undo == 4

    with pytest.raises(UsageError):
        await deck.rewind(agent.id, to=0)
    for missing in ("no-such-agent", ""):
        with pytest.raises(NotFound):
            await deck.checkpoints(missing)
        with pytest.raises(NotFound):
            await deck.rewind(missing, dry_run=True)
    assert (work / "calc.py").read_text() == FIXED  # nothing the refusals changed


async def test_a_merge_lands_a_passing_branch_and_refuses_a_failing_one(
    deck: Deck, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    agent = await worker(deck, repo, tmp_path)
    before = git(repo, "rev-parse", "main")

    failing = "grep -q 'a - b' calc.py"
    refused = await deck.merge(agent.id, test=failing)
    assert (refused.state, refused.landed, refused.test) == (MergeState.REFUSED, False, failing)
    assert refused.reason == f"tests failed on {refused.branch} combined with main: {failing}"
    assert git(repo, "rev-parse", "main") == before

    landed = await deck.merge(agent.name or "", test="grep -q 'a + b' calc.py")
    assert landed.state is MergeState.LANDED and landed.landed
    assert landed.commit == git(repo, "rev-parse", "main").strip()
    assert (landed.reason or "").startswith(f"landed on main as {landed.commit[:12]}")
    assert git(repo, "show", "main:calc.py") == FIXED

    listed = await deck.merges(agent_id=agent.id)
    assert [e.id for e in listed] == [landed.id, refused.id]  # newest first
    assert await deck.merge_entry(landed.id[:8]) == listed[0]
    assert MergeEntry.from_result(listed[0].result()).result() == listed[0].result()
    assert await deck.merges(states=[MergeState.REFUSED], agent_id=agent.name) == [listed[1]]
    assert landed.id in [e.id for e in await deck.merges(states=[MergeState.LANDED])]

    with pytest.raises(Refused):  # only a queued entry is cancelled
        await deck.cancel_merge(landed.id)
    for missing in ("mgnosuchentry", ""):
        with pytest.raises(NotFound):
            await deck.merge_entry(missing)
        with pytest.raises(NotFound):
            await deck.cancel_merge(missing)
    for nobody in ("no-such-agent", ""):
        with pytest.raises(NotFound):
            await deck.merges(agent_id=nobody)
        with pytest.raises(NotFound):
            await deck.merge(nobody)
    for limit in (0, 1001):
        with pytest.raises(UsageError):
            await deck.merges(limit=limit)


HOSTILE_BRANCHES = (
    "", "-x", "--upload-pack=touch /tmp/pwned", "main\x00", "main\n", "../main", "a b",
    "main.lock", "@{-1}", "refs/../main", "x" * 300, ".hidden", "a//b", "a:b",
)  # fmt: skip


async def test_hostile_merge_arguments_are_refused_and_nothing_is_queued(
    deck: Deck, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    agent = await worker(deck, repo, tmp_path)
    for into in HOSTILE_BRANCHES:
        with pytest.raises(UsageError):
            await deck.merge(agent.id, into=into)
    with pytest.raises(WorktreeError, match="no branch"):
        await deck.merge(agent.id, into="no-such-branch")
    with pytest.raises(UsageError):
        await deck.merge(agent.id, test="true\x00rm -rf ~")
    with pytest.raises(UsageError):
        await deck.merge(agent.id, strategy="octopus")  # type: ignore[arg-type]
    assert await deck.merges(agent_id=agent.id) == []
    assert not (tmp_path / "pwned").exists()
    branches = git(repo, "branch", "--list", "--format=%(refname:short)").split()
    assert branches == [agent.extra["worktree"]["branch"], "main"]  # none made


async def test_a_queued_merge_is_cancelled_and_a_merging_one_is_not(
    deck: Deck, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    # Unsandboxed: its test waits for a file outside the scratch worktree.
    first = await worker(deck, repo, tmp_path, profile="permissive")
    second = await worker(deck, repo, tmp_path, fix=False)
    gate = tmp_path / "release"
    held = f"while [ ! -e {gate} ]; do sleep 0.05; done; grep -q 'a + b' calc.py"
    try:
        merging = await deck.merge(first.id, test=held, wait=False)
        assert merging.state in (MergeState.QUEUED, MergeState.MERGING)

        async def under_way() -> MergeEntry | None:
            entry = await deck.merge_entry(merging.id)
            return entry if entry.state is MergeState.MERGING else None

        await eventually(under_way, timeout=MERGE_SECONDS, what="the first merge to start")
        queued = await deck.merge(second.id, test="true", wait=False)
        assert queued.state is MergeState.QUEUED  # behind the first: one at a time
        pending = await deck.merges(states=[MergeState.QUEUED, MergeState.MERGING])
        assert {merging.id, queued.id} <= {e.id for e in pending}

        cancelled = await deck.cancel_merge(queued.id[:8])
        assert (cancelled.id, cancelled.state) == (queued.id, MergeState.CANCELLED)
        with pytest.raises(Refused):
            await deck.cancel_merge(merging.id)
    finally:
        gate.touch()

    async def ended() -> MergeEntry | None:
        entry = await deck.merge_entry(merging.id)
        return None if entry.state in PENDING else entry

    landed = await eventually(ended, timeout=MERGE_SECONDS, what="the first merge to end")
    assert landed.state is MergeState.LANDED, landed
    assert (await deck.merge_entry(queued.id)).state is MergeState.CANCELLED
    assert git(repo, "show", "main:calc.py") == FIXED
    assert not (repo / f"{second.name}.md").exists()  # the cancelled one never landed
