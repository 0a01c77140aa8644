"""What a worktree per agent costs, on a large repository.

    .venv/bin/python benchmarks/worktrees.py [--files 10000] [--mb 200] [--runs 5] [--repo PATH]
        [--only create|checks]

Builds once (kept at ``--repo``, default ``$TMPDIR/agentdeck-bench-repo-F-M``) a
repository of ``--files`` files totalling ``--mb`` MB in nested directories, one
commit. Then, alternating, ``--runs`` times each:

- **create**: ``Worktrees.create`` (every check agentdeck makes: the repository, its
  branch, uncommitted changes, the ref, the branch name; then ``git worktree add``)
  against ``git worktree add -b`` alone, each into a fresh directory, removed after:
  wall time, what create adds run by run, and CPU time (this process and its
  children: steadier than wall time on a shared machine).
  Goal: <= 1.2x git alone. Then the checks alone (what create asks before ``git
  worktree add``), at once as create asks them and one by one as it did before
  (first, before any worktree is made). ``--only checks`` measures these alone,
  ``--only create`` these and create (nothing below).
- **turn's commit**: ``Worktrees.commit_wip`` after one file changed (status, add,
  commit, as at each turn's end) in a worktree of that repository.
- **diff --stat**: ``Worktrees.diff(patch=False)`` with that one file changed.
- **merge queue**: ``--merges`` worktrees, each with a file of its own committed,
  merged into ``main`` one after the other (the queue takes one at a time) with the
  trivial test ``true``: merges per minute, and the time of one.
- **checkpoint**: ``Checkpoints.snapshot`` of a worktree of that repository after one
  file changed (as before each tool call), once the first (every file hashed) is
  done. Goal: <= 100 ms.
- **rewind**: ``Checkpoints.rewind`` one checkpoint back after one file changed (the
  checkpoint it takes first included); and the time of the first snapshot.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _common import header, median
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.checkpoints import Checkpoints
from agentdeck.worktrees.merge import merge
from agentdeck.worktrees.start import refusal, start_of

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=ENV, capture_output=True, text=True, check=True
    ).stdout


def build(repo: Path, files: int, mb: int) -> None:
    if (repo / ".git").is_dir() and git(repo, "rev-list", "--count", "HEAD").strip() == "1":
        return
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    size = mb * 1_000_000 // files
    line = "x = 'the quick brown fox jumps over the lazy dog'  # padding\n"
    body = (line * (size // len(line) + 1))[:size]
    for i in range(files):
        path = repo / f"pkg{i % 50:02d}" / f"mod{i // 50 % 20:02d}" / f"file{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# file {i}\n{body}")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "a large repository")


def forget_branches(repo: Path) -> None:
    """Every branch but main gone (left by an earlier run), and stale worktrees."""
    git(repo, "worktree", "prune")
    names = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    stale = [n for n in names if n != "main"]
    if stale:
        git(repo, "branch", "-D", *stale)


def cpu_time() -> float:
    """CPU seconds this process and the children it waited for used: what a step
    costs whoever else runs on the machine."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def measure(
    repo: Path, runs: int, scratch: Path, *, create_only: bool = False
) -> dict[str, list[float]]:
    forget_branches(repo)
    trees = Worktrees(scratch / "worktrees")
    times: dict[str, list[float]] = {
        "git": [], "create": [], "commit": [], "stat": [], "git cpu": [], "create cpu": []
    }  # fmt: skip
    for n in range(runs):
        for variant in ("git", "create") if n % 2 == 0 else ("create", "git"):
            agent_id = f"bench{n:02d}{variant:>6}".replace(" ", "0")
            started, cpu = time.perf_counter(), cpu_time()
            if variant == "git":
                target = scratch / f"plain-{n}"
                git(repo, "worktree", "add", "--quiet", "-b", f"plain/{n}", str(target), "main")
            else:
                made = await trees.create(agent_id, f"bench {n}", repo)
                target = Path(made.path)
            times[variant].append(time.perf_counter() - started)
            times[f"{variant} cpu"].append(cpu_time() - cpu)
            if variant == "create" and not create_only:
                (target / "pkg00" / "mod00" / "file00000.py").write_text("changed\n")
                started = time.perf_counter()
                await trees.diff(made, patch=False)
                times["stat"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await trees.commit_wip(made, "turn")
                times["commit"].append(time.perf_counter() - started)
            git(repo, "worktree", "remove", "--force", str(target))
        git(repo, "worktree", "prune")
    return times


async def checks(repo: Path, runs: int) -> dict[str, list[float]]:
    """Seconds what ``Worktrees.create`` asks before ``git worktree add`` took: at once
    (``start_of``, as it does) and one by one (``refusal``: the checks as they were
    made before, each its own git process), alternating; nothing is made."""
    times: dict[str, list[float]] = {"at once": [], "one by one": []}
    for n in range(runs):
        branch = f"agentdeck/checks{n:04d}/bench"
        for way in ("at once", "one by one") if n % 2 == 0 else ("one by one", "at once"):
            started = time.perf_counter()
            await (start_of if way == "at once" else refusal)(repo, None, branch)
            times[way].append(time.perf_counter() - started)
    return times


async def merges(repo: Path, count: int, scratch: Path) -> list[float]:
    """Seconds each merge took, landing ``count`` branches on main in turn."""
    trees = Worktrees(scratch / "worktrees")
    made = []
    for n in range(count):
        wt = await trees.create(f"merge{n:04d}bench0", f"m{n}", repo, base="main")
        (Path(wt.path) / f"added{n:04d}.txt").write_text(f"{n}\n")
        await trees.commit_wip(wt, f"change {n}")
        made.append(wt)
    took = []
    for wt in made:
        started = time.perf_counter()
        outcome = await merge(wt, scratch=scratch / "merges", test="true")
        took.append(time.perf_counter() - started)
        if not outcome.landed:
            raise SystemExit(f"a merge was refused: {outcome.reason}")
    for wt in made:
        git(repo, "worktree", "remove", "--force", wt.path)
    return took


async def checkpoints(repo: Path, runs: int, scratch: Path) -> dict[str, list[float]]:
    """Seconds the first snapshot of a worktree took, then each snapshot and each
    rewind one checkpoint back, after one file changed."""
    tree = scratch / "checkpointed"
    git(repo, "worktree", "add", "--quiet", "--detach", str(tree), "main")
    shadows = Checkpoints(scratch / "checkpoints")
    times: dict[str, list[float]] = {"first": [], "snapshot": [], "rewind": []}
    edited, other = (
        tree / "pkg00" / "mod00" / "file00000.py",
        tree / "pkg01" / "mod00" / "file00001.py",
    )
    try:
        started = time.perf_counter()
        await shadows.snapshot("bench", tree, tool="Bash", summary="Bash: true")
        times["first"].append(time.perf_counter() - started)
        for n in range(runs):
            edited.write_text(f"changed {n}\n")
            started = time.perf_counter()
            taken = await shadows.snapshot("bench", tree, tool="Edit", summary="Edit file00000.py")
            times["snapshot"].append(time.perf_counter() - started)
            other.write_text(f"changed {n}\n")
            started = time.perf_counter()
            done = await shadows.rewind("bench", tree, to=taken.n)
            times["rewind"].append(time.perf_counter() - started)
            if done.restored != ["pkg01/mod00/file00001.py"] or done.removed:
                raise SystemExit(f"the rewind did not do what it should: {done}")
    finally:
        git(repo, "worktree", "remove", "--force", str(tree))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repo", type=Path, default=None)
    parser.add_argument("--merges", type=int, default=10)
    parser.add_argument("--only", choices=("create", "checks"), help="measure this alone")
    args = parser.parse_args()
    repo = args.repo or Path(tempfile.gettempdir()) / f"agentdeck-bench-repo-{args.files}-{args.mb}"
    header("worktrees: one per agent, on a large repository")
    started = time.perf_counter()
    build(repo, args.files, args.mb)
    print(f"  repository: {repo} ({args.files:,} files, {args.mb} MB; ready in "
          f"{time.perf_counter() - started:.1f} s)")  # fmt: skip
    forget_branches(repo)
    looked = asyncio.run(checks(repo, args.runs * 4))
    at_once, one_by_one = median(looked["at once"]), median(looked["one by one"])
    print(f"  the checks before git worktree add, {args.runs * 4} runs each (median): at once "
          f"{at_once * 1000:.1f} ms, one by one {one_by_one * 1000:.1f} ms")  # fmt: skip
    if args.only == "checks":
        return
    with tempfile.TemporaryDirectory(dir=repo.parent) as tmp:
        times = asyncio.run(measure(repo, args.runs, Path(tmp), create_only=args.only == "create"))
    plain, made = median(times["git"]), median(times["create"])
    print(f"  create, {args.runs} runs each (median):")
    print(f"    git worktree add alone   {plain * 1000:8.0f} ms")
    print(f"    Worktrees.create         {made * 1000:8.0f} ms   ratio {made / plain:.2f}x "
          f"(goal <= 1.20x: {'met' if made / plain <= 1.2 else 'not met'})")  # fmt: skip
    added = median([c - g for g, c in zip(times["git"], times["create"], strict=True)])
    print(f"    what create adds, run by run (median): {added * 1000:+.0f} ms")
    plain_cpu, made_cpu = median(times["git cpu"]), median(times["create cpu"])
    print(f"    CPU time (median): git alone {plain_cpu * 1000:.0f} ms, create "
          f"{made_cpu * 1000:.0f} ms, ratio {made_cpu / plain_cpu:.2f}x")  # fmt: skip
    if args.only == "create":
        return
    main_before = git(repo, "rev-parse", "main").strip()
    with tempfile.TemporaryDirectory(dir=repo.parent) as tmp:
        merged = asyncio.run(merges(repo, args.merges, Path(tmp)))
    git(repo, "update-ref", "refs/heads/main", main_before)  # the fixture stays as built
    git(repo, "reset", "--hard", "--quiet", "main")
    forget_branches(repo)
    with tempfile.TemporaryDirectory(dir=repo.parent) as tmp:
        checkpointed = asyncio.run(checkpoints(repo, args.runs, Path(tmp)))
    commit, stat = median(times["commit"]) * 1000, median(times["stat"]) * 1000
    print(f"  a turn's commit after one file changed: median {commit:.0f} ms")
    print(f"  diff --stat with one file changed:     median {stat:.0f} ms")
    print(
        f"  merge queue, {len(merged)} merges with test `true`: "
        f"{len(merged) / sum(merged) * 60:.1f} per minute, median {median(merged) * 1000:.0f} ms"
    )
    snapshot = median(checkpointed["snapshot"]) * 1000
    print(f"  checkpoint after one file changed:      median {snapshot:.0f} ms "
          f"(goal <= 100 ms: {'met' if snapshot <= 100 else 'not met'})")  # fmt: skip
    print(f"  rewind one checkpoint back:             median "
          f"{median(checkpointed['rewind']) * 1000:.0f} ms")  # fmt: skip
    print(f"  first checkpoint (every file hashed):   {checkpointed['first'][0]:.1f} s")


if __name__ == "__main__":
    main()
