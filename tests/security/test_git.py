"""Door 4: a worktree agent owns its repository's git directory.

A hostile agent in a worktree, under a process sandbox, through the scripted
model and the real Claude Code CLI: it tries to move ``main`` (``update-ref``,
its own ``HEAD`` pointed at ``main`` before agentdeck's end-of-turn commit), to
rewrite the ``.git`` file, the repository's ``config``, ``hooks/``,
``info/attributes`` and its worktree's ``commondir``/``gitdir``/``config.worktree``,
and plants what agentdeck's own git would run (a nested repository's fsmonitor,
hooks and filters), and rewrites objects ``main`` reaches (loose and packed,
in the repository's store; and under their names in its own object directory).
Its own commit on its own branch still works, and agentdeck's diff, the merge
queue and ``git log`` in the repository see it once the turn is over.

Then agentdeck's git helper without a sandbox: a hostile ``.git`` file,
``commondir`` or repository config in a plain repository is never followed or run.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.core.merge_queue import MergeState
from agentdeck.core.sandbox import SandboxSpec
from agentdeck.core.worktree import GitPlaces, Worktree, branch_name, own_namespace
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import WorktreeError
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees, standing
from agentdeck.worktrees.manager import remove
from tests.conftest import make_settings
from tests.sandbox.conftest import _base, needs_bwrap
from tests.support.waiting import wait_event
from tests.worktrees.conftest import git, make_repo

AGENT = "a0kz3m1x9q4wfc2b"
FILES = {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"}


# -- what a hostile agent plants ---------------------------------------------------


def trap(markers: Path, name: str) -> str:
    """An executable that leaves ``markers/name`` behind if anything runs it (and
    passes its input through, as a filter would)."""
    markers.mkdir(parents=True, exist_ok=True)
    script = markers.parent / f"trap-{name}.sh"
    script.write_text(f"#!/bin/sh\ntouch '{markers / name}'\ncat\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


def hostile_git_dir(git_dir: Path, markers: Path) -> None:
    """Everything in a git directory's config and hooks that a git command run
    there would execute."""
    config = {
        "core.fsmonitor": trap(markers, "fsmonitor"),
        "core.hooksPath": str(git_dir / "evil-hooks"),
        "filter.evil.clean": trap(markers, "clean"),
        "filter.evil.smudge": trap(markers, "smudge"),
        "filter.evil.required": "true",
        "diff.evil.textconv": trap(markers, "textconv"),
        "diff.evil.command": trap(markers, "diff-command"),
        "diff.external": trap(markers, "diff-external"),
        "log.showSignature": "true",
        "gpg.program": trap(markers, "gpg"),
        "merge.evil.driver": trap(markers, "merge-driver"),
        "gc.auto": "1",
    }
    for key, value in config.items():
        git(git_dir.parent, f"--git-dir={git_dir}", "config", key, value)
    for hooks in (git_dir / "hooks", git_dir / "evil-hooks"):
        hooks.mkdir(exist_ok=True)
        for hook in (
            "pre-commit", "post-commit", "post-checkout", "reference-transaction",
            "post-index-change", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman",
        ):  # fmt: skip
            (hooks / hook).symlink_to(trap(markers, f"hook-{hook}"))
    info = git_dir / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* filter=evil diff=evil merge=evil\n")


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir()) if markers.is_dir() else []


# -- agentdeck's own git, without a sandbox -----------------------------------------

pytestmark = pytest.mark.anyio


@pytest.fixture
def trees(tmp_path: Path) -> Worktrees:
    return Worktrees(tmp_path / "home" / "worktrees")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


async def test_a_git_file_pointing_elsewhere_is_never_followed(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    # The agent's own repository, with everything a git command there would run.
    evil = make_repo(tmp_path / "evil", {"x": "x\n"})
    markers = tmp_path / "markers"
    hostile_git_dir(evil / ".git", markers)
    (work / ".git").write_text(f"gitdir: {evil / '.git'}\n")
    (work / "calc.py").write_text("changed\n")
    main = git(repo, "rev-parse", "main")

    for attempt in (
        trees.commit_wip(wt, "wip"),
        trees.diff(wt),
        standing(wt),
    ):
        with pytest.raises(WorktreeError, match=r"\.git file"):
            await attempt
    assert ran(markers) == []
    assert git(repo, "rev-parse", "main") == main
    assert git(evil, "log", "--format=%s") == "initial\n"


@pytest.mark.parametrize("where", ["commondir", "gitdir"])
async def test_a_worktree_git_dir_pointing_elsewhere_is_refused(
    repo: Path, trees: Worktrees, tmp_path: Path, where: str
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    evil = make_repo(tmp_path / "evil", {"x": "x\n"})
    markers = tmp_path / "markers"
    hostile_git_dir(evil / ".git", markers)
    admin = repo / ".git" / "worktrees" / AGENT
    (admin / where).write_text(f"{evil / '.git'}\n")
    (Path(wt.path) / "calc.py").write_text("changed\n")

    with pytest.raises(WorktreeError):
        await trees.commit_wip(wt, "wip")
    assert ran(markers) == []
    assert git(evil, "log", "--format=%s") == "initial\n"


async def test_what_the_repository_config_would_run_never_runs(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    markers = tmp_path / "markers"
    # As if an agent had written them before it was confined (or a repository an
    # agent made): agentdeck commits, diffs, reads and removes the worktree anyway.
    hostile_git_dir(repo / ".git", markers)
    (work / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "new.txt").write_text("new\n")

    commit = await trees.commit_wip(wt, "wip")
    assert commit is not None
    assert git(repo, "show", f"{commit}:calc.py").endswith("a + b\n")
    (work / "calc.py").write_text("again\n")
    diff = await trees.diff(wt)
    assert {f.path for f in diff.files} >= {"calc.py", "new.txt"}
    assert "+again" in diff.patch
    await standing(wt)
    await remove(wt, force=True)
    assert ran(markers) == []


async def test_a_worktree_from_a_hostile_repository_runs_nothing_of_it(
    trees: Worktrees, tmp_path: Path
) -> None:
    # An orchestrator's own workspace, made into a repository, a child started in it.
    repo = make_repo(tmp_path / "made", {**FILES, ".gitattributes": "* filter=evil\n"})
    markers = tmp_path / "markers"
    hostile_git_dir(repo / ".git", markers)
    wt = await trees.create(AGENT, "w", repo)
    assert (Path(wt.path) / "calc.py").read_text() == FILES["calc.py"]
    assert ran(markers) == []


async def test_the_wip_commit_refuses_a_head_moved_off_the_agents_branch(
    repo: Path, trees: Worktrees
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    main = git(repo, "rev-parse", "main")
    git(work, "symbolic-ref", "HEAD", "refs/heads/main")
    (work / "evil.txt").write_text("evil\n")

    with pytest.raises(WorktreeError, match="HEAD"):
        await trees.commit_wip(wt, "wip")
    assert git(repo, "rev-parse", "main") == main
    assert git(repo, "rev-parse", wt.branch) == main  # its own branch did not move either
    git(work, "update-ref", "--no-deref", "HEAD", main.strip())  # detached: refused too
    with pytest.raises(WorktreeError, match="HEAD"):
        await trees.commit_wip(wt, "wip")


async def test_a_nested_repository_in_the_worktree_runs_nothing(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    markers = tmp_path / "markers"
    sub = make_repo(work / "sub", {"a": "a\n", ".gitattributes": "* filter=evil\n"})
    git(work, "add", "sub")  # a gitlink: status and diff would look inside it
    hostile_git_dir(sub / ".git", markers)
    (sub / "a").write_text("dirty\n")
    (sub / "b").write_text("untracked\n")

    assert await trees.commit_wip(wt, "wip") is not None
    await trees.diff(wt)
    await standing(wt)
    assert ran(markers) == []


# -- what the sandbox is told: pure ------------------------------------------------


def test_an_agents_branch_lives_in_a_directory_of_its_own() -> None:
    # Two agents made in the same second share the first 8 characters of their ids.
    first, second = "a0kz3m1x9q4wfc2", "a0kz3m1x7rrrrrr"
    one, two = branch_name("Fixer", first), branch_name("Fixer", second)
    assert one == f"agentdeck/{first}/fixer"
    assert own_namespace(one) == f"agentdeck/{first}" != own_namespace(two)
    assert branch_name("../Weird  name..", first) == f"agentdeck/{first}/weird-name"
    assert own_namespace("agentdeck/fixer-a0kz3m1x") is None  # made before: none


def places(branch: str = f"agentdeck/{AGENT}/w") -> GitPlaces:
    wt = Worktree("/r", f"/h/worktrees/{AGENT}", branch, "main", "0" * 40, "/r/.git")
    return GitPlaces.of(wt, f"/r/.git/worktrees/{AGENT}")


def test_the_sandbox_may_write_the_agents_own_places_in_the_git_dir_and_nothing_else() -> None:
    spec = SandboxSpec().with_git_dir(places(), workspace=f"/h/worktrees/{AGENT}", home="/u")
    admin = f"/r/.git/worktrees/{AGENT}"
    assert "/r/.git" not in spec.allow_write
    assert not any(p.startswith("/r/.git/objects") for p in spec.allow_write)
    assert set(spec.allow_write) >= {
        f"/r/.git/refs/heads/agentdeck/{AGENT}", f"/r/.git/logs/refs/heads/agentdeck/{AGENT}",
        admin,
    }  # fmt: skip
    assert set(spec.deny_write) >= {
        "/r/.git/objects", f"{admin}/agentdeck-common", f"{admin}/agentdeck-objects/info",
        f"{admin}/agentdeck-objects/pack", f"{admin}/commondir", f"{admin}/gitdir",
        f"{admin}/config.worktree", f"/h/worktrees/{AGENT}/.git",
    }  # fmt: skip
    # A branch named before this (agentdeck/<name>-<id>) shares its directory: the
    # agent does not write it (its turns are still committed, by agentdeck).
    old = SandboxSpec().with_git_dir(
        places("agentdeck/w-a0kz3m1x"), workspace=f"/h/worktrees/{AGENT}", home="/u"
    )
    assert not any("/refs/" in p or "/logs/" in p for p in old.allow_write)


def test_a_profile_that_opens_the_repository_gets_its_git_dir_closed() -> None:
    opened = SandboxSpec(allow_write=(".", "/r"))
    spec = opened.with_git_dir(places(), workspace=f"/h/worktrees/{AGENT}", home="/u")
    assert "/r/.git" in spec.deny_write
    assert not any(p.startswith("/r/.git/") for p in spec.allow_write)


# -- a hostile agent under a process sandbox, on the real CLI ----------------------


@dataclass
class Hostile:
    repo: Path
    markers: Path
    agent: Any
    outputs: dict[str, str]
    notices: list[dict[str, Any]]
    main: str
    before: dict[str, bytes]
    after: Any = None  # what ``after`` found, once the agent was done


# (case, command): each prints its exit status last.
ATTEMPTS = [
    ("update_ref_main", "git update-ref refs/heads/main HEAD"),
    ("update_ref_other", "git update-ref refs/heads/other HEAD"),
    ("new_branch", "git branch sneaky"),
    ("new_tag", "git tag sneaky"),
    ("git_config", 'git config core.fsmonitor "$TRAP"'),
    ("write_config", 'echo "[core] fsmonitor = $TRAP" >> "$C/config"'),
    ("write_hook", 'cp "$TRAP" "$C/hooks/post-commit"'),
    ("write_info_attributes", 'echo "* filter=evil" > "$C/info/attributes"'),
    ("write_main_head", 'echo "ref: refs/heads/sneaky" > "$C/HEAD"'),
    ("write_packed_refs", 'echo "$(git rev-parse HEAD) refs/heads/x" >> "$C/packed-refs"'),
    ("write_alternates", 'echo "$MINE/objects" > "$C/objects/info/alternates"'),
    ("write_pack", 'touch "$C/objects/pack/pack-0000.idx"'),
    ("write_config_worktree", 'echo "[core] fsmonitor = $TRAP" > "$A/config.worktree"'),
    ("write_other_ref_dir", 'echo x > "$C/refs/heads/agentdeck/other-ref"'),
    # What stands for the repository to its git, and its own object directory's
    # alternates and packs (a pack is read before any loose object).
    ("relink_own_objects", 'ln -sfn "$C/objects" "$A/agentdeck-common/objects"'),
    ("relink_own_config", 'ln -sfn "$MINE/config" "$A/agentdeck-common/config"'),
    ("write_own_alternates", 'echo "$MINE/objects" > "$A/agentdeck-objects/info/alternates"'),
    ("write_own_pack", 'touch "$A/agentdeck-objects/pack/pack-0000.idx"'),
    ("write_object", 'mkdir -p "$C/objects/ee" && echo x > "$C/objects/ee/$(printf %038d 0)"'),
]
# Last: done, they would leave the rest nothing to work on.
LAST = [
    ("write_commondir", 'echo "$MINE" > "$A/commondir"'),
    ("write_gitdir", 'echo "/etc/.git" > "$A/gitdir"'),
    ("write_git_file", 'echo "gitdir: $MINE" > .git'),
    ("move_git_file", "mv .git gone"),
]
WORKS = [
    (
        "own_commit",
        "echo mine > mine.txt && git add mine.txt"
        " && git -c user.name=a -c user.email=a@b commit -q -m 'its own commit'"
        " && git log -1 --format=%s",
    ),
]
PLANT = (
    # A nested repository whose config and hooks would run if agentdeck's git looked
    # inside it; a gitlink to it; a filter asked for by the worktree's attributes.
    "git init -q sub && echo a > sub/a && git -C sub add a"
    " && git -C sub -c user.name=a -c user.email=a@b commit -q -m s"
    ' && git -C sub config core.fsmonitor "$TRAP"'
    ' && git -C sub config filter.evil.clean "$TRAP" && echo "* filter=evil" > sub/.gitattributes'
    ' && mkdir -p sub/.git/hooks && cp "$TRAP" sub/.git/hooks/post-commit'
    " && echo dirty > sub/a && git add sub"
    ' && echo "* filter=evil" > .gitattributes && echo wip > wip.txt'
)


# A repository of its own, and a clone of it: their objects are theirs, whatever
# the worktree's are (no environment variable says otherwise).
NESTED = (
    "git init -q nest && echo n > nest/n && git -C nest add n"
    " && git -C nest -c user.name=a -c user.email=a@b commit -q -m n"
    " && git clone -q nest nest-clone && git -C nest-clone log --format=%s"
)


def _env_line(markers: Path) -> str:
    return (
        # From the .git file, not from git: each attempt stands alone even when an
        # earlier one broke the worktree.
        'A=$(sed "s/^gitdir: //" .git); C=$(dirname "$(dirname "$A")");'
        f" TRAP={markers.parent / 'trap-agent.sh'}; MINE=$PWD/mine-git; "
    )


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    """Outside ``/tmp``: a sandbox has a private one, and a repository it cannot see
    proves less than one it sees read-only."""
    with _base(Path("/var/tmp")) as where:
        yield where


After = Callable[[Runner, Store, Any], Awaitable[Any]]


def hostile_run(
    base: Path,
    name: str,
    commands: list[tuple[str, str]],
    *,
    in_home: bool = False,
    packed: bool = False,
    after: After | None = None,
    killed_in_last: bool = False,
) -> Hostile:
    settings = make_settings(base / name)
    settings.ensure_home()
    # In agentdeck's home (as the demo's), the sandbox hides all of the repository
    # but what it binds: the agent sees its own places, and writes nothing else.
    where = settings.home_dir / "calc-repo" if in_home else base / name / "repo"
    repo = make_repo(where, FILES)
    git(repo, "branch", "other")
    if packed:  # every object of main in a pack, none loose
        git(repo, "repack", "-a", "-d", "-q")
        git(repo, "prune-packed")
    markers = base / name / "markers"
    trap(markers, "agent")
    main = git(repo, "rev-parse", "main")
    watched = [".git/config", ".git/HEAD", ".git/packed-refs", ".git/info/attributes"]
    before = {p: (repo / p).read_bytes() for p in watched if (repo / p).exists()}
    profile = base / name / "boxed.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "boxed",
                "default": "allow",
                "sandbox": {"mode": "process", "required": True, "network": {"mode": "off"}},
            }
        )
    )
    prefix = _env_line(markers)
    bash = [{"name": "Bash", "input": {"command": f"{prefix}{c}; echo rc=$?"}} for _, c in commands]
    turns = [{"reply": [{"tool_use": tool}]} for tool in bash]
    scenario = base / name / "hostile.yaml"
    scenario.write_text(
        yaml.safe_dump({"name": name, "turns": [*turns, {"reply": [{"text": "Done."}]}]})
    )

    async def go() -> Hostile:
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        try:
            spec = AgentSpec(
                prompt="work", scenario=str(scenario), profile=str(profile), cwd=str(repo),
                workspace="worktree", name=name,
            )  # fmt: skip
            session = await runner.start(spec)
            if killed_in_last:  # killed while its last command runs: its turn cut short
                await wait_event(
                    store, session.agent.id, EventType.TOOL_CALLED, timeout=120,
                    where=lambda e: "KILL-ME" in str(e.data.get("input")),
                )  # fmt: skip
                await session.kill()
            await session.wait_finished(timeout=240)
            agent = await store.get_agent(session.agent.id)
            events = await store.read(agent_id=agent.id)
            found = await after(runner, store, agent) if after is not None else None
        finally:
            await runner.shutdown()
            await store.close()
        outputs = [e.data["output"] for e in events if e.type == EventType.TOOL_RETURNED]
        if killed_in_last and len(outputs) < len(commands):
            # Killed before its result was read; or its command died first (the kill
            # reaches the process group) and Claude Code said so: either way cut short.
            outputs.append("")
        assert not killed_in_last or "rc=0" not in outputs[-1], outputs
        assert len(outputs) == len(commands), [
            e.data for e in events if e.type == EventType.ERROR_OCCURRED
        ]
        notices = [
            e.data
            for e in events
            if e.type == EventType.NOTICE and e.data.get("kind") == "worktree"
        ]
        by_case = {case: out for (case, _), out in zip(commands, outputs, strict=True)}
        return Hostile(repo, markers, agent, by_case, notices, main, before, found)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def hostile(base: Path) -> Hostile:
    return hostile_run(
        base, "hostile", [*ATTEMPTS, *WORKS, ("nested", NESTED), ("plant", PLANT), *LAST]
    )


@pytest.fixture(scope="module")
def hijack(base: Path) -> Hostile:
    return hostile_run(
        base, "hijack",
        [("hijack", "git symbolic-ref HEAD refs/heads/main; echo evil > evil.txt")],
    )  # fmt: skip


@pytest.fixture(scope="module")
def hidden(base: Path) -> Hostile:
    return hostile_run(
        base, "hidden", [ATTEMPTS[0], *WORKS, ("leave", "echo left > left.txt")], in_home=True
    )


# EVIL under the name of main's calc.py: in the repository's store, where main's
# objects are loose (the file replaced) or packed (the pack overwritten, a loose
# object or a pack beside it); then in the agent's own object directory, which it
# writes (a shadow only its own git reads, dropped at the turn's end); then a
# commit of its own that keeps calc.py (its tree names the real object).
EVIL = 'E=$(echo "EVIL" | git hash-object -w --stdin); B=$(git rev-parse main:calc.py);'
# Where git wrote it: the agent's own object directory (before: the repository's).
OWN_EVIL = (
    f'{EVIL} F=$(ls "$A/agentdeck-objects/${{E:0:2}}/${{E:2}}" "$C/objects/${{E:0:2}}/${{E:2}}"'
    " 2>/dev/null | head -n 1);"
)
SWAP_LOOSE = (
    f"{OWN_EVIL}"
    ' cp "$F" "$C/objects/${B:0:2}/x" && mv -f "$C/objects/${B:0:2}/x" "$C/objects/${B:0:2}/${B:2}"'
)
SWAP_PACKED = [
    ("swap", f'{OWN_EVIL} P=$(ls "$C"/objects/pack/pack-*.pack | head -n 1); cp "$F" "$P"'),
    (
        "swap_loose",
        f'{OWN_EVIL} mkdir -p "$C/objects/${{B:0:2}}" && cp "$F" "$C/objects/${{B:0:2}}/${{B:2}}"',
    ),
    ("swap_new_pack", f'{OWN_EVIL} cp "$F" "$C/objects/pack/pack-$B.pack"'),
]
SHADOW = (
    f'{OWN_EVIL} mkdir -p "$A/agentdeck-objects/${{B:0:2}}"'
    ' && cp "$F" "$A/agentdeck-objects/${B:0:2}/${B:2}" && git show main:calc.py'
)
KEEP = (
    "echo more >> README.md"
    " && git -c user.name=a -c user.email=a@b commit -q -a -m 'keeps calc.py'"
    " && git log -1 --format=%s"
)


def _swap(packed: bool) -> list[tuple[str, str]]:
    swaps = SWAP_PACKED if packed else [("swap", SWAP_LOOSE)]
    return [*swaps, ("shadow", SHADOW), ("keep", KEEP)]


@pytest.fixture(scope="module")
def swapped(base: Path) -> Hostile:
    return hostile_run(base, "swapped", _swap(packed=False))


@pytest.fixture(scope="module")
def swapped_packed(base: Path) -> Hostile:
    return hostile_run(base, "swapped-packed", _swap(packed=True), packed=True)


def status(output: str) -> int:
    return int(output.strip().rsplit("rc=", 1)[1])


@needs_bwrap
@pytest.mark.cli
@pytest.mark.parametrize("case", [case for case, _ in [*ATTEMPTS, *LAST]])
def test_a_sandboxed_worktree_agent_cannot_write_git_beyond_its_branch(
    hostile: Hostile, case: str
) -> None:
    assert status(hostile.outputs[case]) != 0, hostile.outputs[case]


@needs_bwrap
@pytest.mark.cli
def test_nothing_of_the_repository_moved_and_nothing_planted_ran(hostile: Hostile) -> None:
    repo = hostile.repo
    assert status(hostile.outputs["plant"]) == 0, hostile.outputs["plant"]
    assert hostile.agent.state == AgentState.DONE, hostile.agent.last_error
    assert hostile.agent.extra["sandbox"] == "process"
    assert git(repo, "rev-parse", "main") == hostile.main
    assert git(repo, "rev-parse", "other") == hostile.main
    assert git(repo, "branch", "--list", "sneaky") == ""
    assert git(repo, "tag", "--list") == ""
    for path, content in hostile.before.items():
        assert (repo / path).read_bytes() == content, path
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert not (repo / ".git" / "objects" / "info" / "alternates").exists()
    work = Path(hostile.agent.extra["worktree"]["path"])
    admin = repo / ".git" / "worktrees" / hostile.agent.id
    assert (work / ".git").read_text() == f"gitdir: {admin}\n"
    assert (admin / "commondir").read_text() == "agentdeck-common\n"
    assert (admin / "agentdeck-objects" / "info" / "alternates").read_text() == (
        f"{repo / '.git' / 'objects'}\n"
    )
    assert (admin / "agentdeck-common" / "objects").readlink() == Path("../agentdeck-objects")
    assert ran(hostile.markers) == []


@needs_bwrap
@pytest.mark.cli
def test_the_agents_own_commit_and_the_turns_commit_land_on_its_branch(hostile: Hostile) -> None:
    out = hostile.outputs["own_commit"]
    assert status(out) == 0 and "its own commit" in out, out
    repo, branch = hostile.repo, hostile.agent.extra["worktree"]["branch"]
    subjects = git(repo, "log", "--format=%s", branch).splitlines()
    assert subjects[:2] == [f"agentdeck: hostile, work in progress (turn {hostile.agent.turns})",
                            "its own commit"]  # fmt: skip
    assert "wip.txt" in git(repo, "show", "--name-only", "--format=", branch)
    assert [n["message"].split(" as ")[0] for n in hostile.notices] == [
        f"committed the turn's changes on {branch}"
    ]


@needs_bwrap
@pytest.mark.cli
def test_its_own_repositories_and_clones_keep_their_objects(hostile: Hostile) -> None:
    assert status(hostile.outputs["nested"]) == 0, hostile.outputs["nested"]
    work = Path(hostile.agent.extra["worktree"]["path"])
    git(work / "nest", "fsck", "--strict")
    assert git(work / "nest-clone", "log", "--format=%s") == "n\n"
    assert not (work / "nest-clone" / ".git" / "objects" / "info" / "alternates").exists()


@pytest.fixture(scope="module")
def cut_short(base: Path) -> Hostile:
    return hostile_run(
        base, "cut-short", [*WORKS, ("wait", "sleep 300 # KILL-ME")], killed_in_last=True
    )


@needs_bwrap
@pytest.mark.cli
def test_a_turn_cut_short_has_its_commits_taken_in_when_its_process_is_gone(
    cut_short: Hostile,
) -> None:
    repo, branch = cut_short.repo, cut_short.agent.extra["worktree"]["branch"]
    assert cut_short.agent.state == AgentState.KILLED
    assert status(cut_short.outputs["own_commit"]) == 0, cut_short.outputs["own_commit"]
    assert git(repo, "log", "--format=%s", branch).splitlines() == ["its own commit", "initial"]
    git(repo, "fsck", "--strict", "--no-dangling")


@needs_bwrap
@pytest.mark.cli
def test_a_head_pointed_at_main_is_not_committed_on(hijack: Hostile) -> None:
    repo = hijack.repo
    assert git(repo, "rev-parse", "main") == hijack.main
    assert "evil.txt" not in git(repo, "ls-tree", "--name-only", "main")
    branch = hijack.agent.extra["worktree"]["branch"]
    assert git(repo, "rev-parse", branch) == hijack.main
    (notice,) = hijack.notices
    assert notice["message"].startswith("the turn's changes could not be committed: ")
    assert "HEAD" in notice["message"] and "refs/heads/main" in notice["message"]


@needs_bwrap
@pytest.mark.cli
def test_a_repository_the_sandbox_hides_is_still_worked_on_and_not_moved(hidden: Hostile) -> None:
    repo, branch = hidden.repo, hidden.agent.extra["worktree"]["branch"]
    assert status(hidden.outputs["own_commit"]) == 0, hidden.outputs["own_commit"]
    assert git(repo, "rev-parse", "main") == hidden.main
    assert git(repo, "log", "--format=%s", branch).splitlines()[1:] == [
        "its own commit", "initial",
    ]  # fmt: skip
    assert "left.txt" in git(repo, "show", "--name-only", "--format=", branch)


@needs_bwrap
@pytest.mark.cli
@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_main_s_objects_cannot_be_rewritten_under_it(
    swapped: Hostile, swapped_packed: Hostile, packed: bool
) -> None:
    run = swapped_packed if packed else swapped
    repo, branch = run.repo, run.agent.extra["worktree"]["branch"]
    for case in (case for case in run.outputs if case.startswith("swap")):
        assert status(run.outputs[case]) != 0, run.outputs[case]
    assert git(repo, "rev-parse", "main") == run.main
    assert git(repo, "show", "main:calc.py") == FILES["calc.py"], run.outputs
    git(repo, "fsck", "--strict", "--no-dangling")
    # Its own git read the shadow it wrote in its own object directory (where main's
    # is loose: git reads packs first); agentdeck took its commit in (verified), read
    # the repository's calc.py, and dropped the shadow.
    assert ("EVIL" in run.outputs["shadow"]) is not packed, run.outputs["shadow"]
    assert status(run.outputs["keep"]) == 0 and "keeps calc.py" in run.outputs["keep"]
    assert git(repo, "log", "-1", "--format=%s", branch) == "keeps calc.py\n"
    assert git(repo, "show", f"{branch}:calc.py") == FILES["calc.py"]
    blob = git(repo, "rev-parse", "main:calc.py").strip()
    own = repo / ".git" / "worktrees" / run.agent.id / "agentdeck-objects"
    assert not (own / blob[:2] / blob[2:]).exists()
    assert not run.notices, run.notices  # nothing failed to be taken in


async def _diff_and_merge(runner: Runner, store: Store, agent: Any) -> dict[str, Any]:
    """What agentdeck makes of the agent's own commit: its diff, and the merge
    queue's outcome (a test that needs the commit's file, in the sandbox)."""
    wt = Worktree.from_extra(agent.extra)
    assert wt is not None
    diff = await runner.worktrees.diff(wt)
    entry = await runner.merge(agent, into="main", test="grep -q mine mine.txt", by="user:test")
    return {"diff": diff, "merge": entry}


@pytest.fixture(scope="module")
def committed(base: Path) -> Hostile:
    return hostile_run(base, "committed", [*WORKS], after=_diff_and_merge)


@needs_bwrap
@pytest.mark.cli
def test_the_agents_own_commit_is_seen_by_the_diff_the_merge_queue_and_the_repository(
    committed: Hostile,
) -> None:
    repo, branch = committed.repo, committed.agent.extra["worktree"]["branch"]
    assert status(committed.outputs["own_commit"]) == 0, committed.outputs["own_commit"]
    # Only its own commit: nothing was left for agentdeck's end-of-turn commit.
    assert git(repo, "log", "--format=%s", branch).splitlines() == ["its own commit", "initial"]
    diff = committed.after["diff"]
    assert [f.path for f in diff.files] == ["mine.txt"]
    assert "+mine" in diff.patch
    merge = committed.after["merge"]
    assert merge.state is MergeState.LANDED, merge
    assert git(repo, "show", "main:mine.txt") == "mine\n"
    git(repo, "fsck", "--strict", "--no-dangling")
