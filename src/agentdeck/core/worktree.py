"""A git worktree per agent: its branch name, what the agent row keeps of it, and
what git's plumbing output says. Pure: ``agentdeck.worktrees`` runs git."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

BRANCH_PREFIX = "agentdeck/"
Strategy = Literal["merge", "squash", "rebase"]  # how a branch is landed
STRATEGIES: tuple[Strategy, ...] = ("merge", "squash", "rebase")
_SLUG = re.compile(r"[^a-z0-9._-]+")


def branch_name(agent_name: str, agent_id: str) -> str:
    """``agentdeck/<agent id>/<name>``: a valid ref name whatever the agent's name,
    in a directory of refs that is the agent's alone (a sandbox lets it write there
    and nowhere else in ``refs/``). The whole id: two agents made in the same second
    share its first characters."""
    slug = _SLUG.sub("-", agent_name.lower()).strip("-._")[:40].rstrip("-._") or "agent"
    slug = slug.replace("..", ".").removesuffix(".lock")
    return f"{BRANCH_PREFIX}{agent_id}/{slug}"


def own_namespace(branch: str) -> str | None:
    """``agentdeck/<agent id>``, the directory of refs that holds only this agent's
    branch; None for a branch named before agents had one (``agentdeck/<name>-<id>``,
    whose directory all such branches share)."""
    parts = branch.split("/")
    if len(parts) != 3 or f"{parts[0]}/" != BRANCH_PREFIX or not all(parts):
        return None
    return f"{parts[0]}/{parts[1]}"


_FIELDS = ("repo", "path", "branch", "base", "base_commit", "git_dir")


@dataclass(frozen=True)
class Worktree:
    """Where an agent works when it has a worktree (kept in ``agent.extra``)."""

    repo: str  # the repository's top level (its main working tree)
    path: str  # the worktree, under AGENTDECK_HOME/worktrees/
    branch: str  # agentdeck/<agent id>/<name> (before: agentdeck/<name>-<short id>)
    base: str  # what it was made from: a branch name, or the ref given
    base_commit: str  # the commit it started at: what its diff is taken against
    git_dir: str  # the repository's git directory, shared by its worktrees

    def to_dict(self) -> dict[str, str]:
        return {
            "repo": self.repo,
            "path": self.path,
            "branch": self.branch,
            "base": self.base,
            "base_commit": self.base_commit,
            "git_dir": self.git_dir,
        }

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> Worktree | None:
        data = extra.get("worktree")
        if not isinstance(data, dict):
            return None
        try:
            return cls(**{k: str(data[k]) for k in _FIELDS})
        except KeyError:
            return None


@dataclass(frozen=True)
class GitPlaces:
    """What of its repository's git directory a worktree agent may write (its
    commits: its own object directory, its own branch and reflog, its worktree's own
    directory), and what inside those it may not (what says where the repository is,
    what git reads as configuration, what would shadow objects).

    The repository's objects are read-only to it: its worktree's ``commondir`` names
    a directory agentdeck makes (``OWN_COMMON``) that links to every part of the
    repository's git directory but ``objects``, which is the agent's own
    (``OWN_OBJECTS``, the repository's store as its alternate). What it commits
    there is taken into the repository's store by agentdeck, verified."""

    common: str  # the repository's git directory
    writable: tuple[str, ...]
    read_only: tuple[str, ...]

    @classmethod
    def of(cls, worktree: Worktree, admin: str) -> GitPlaces:
        """``admin``: the worktree's own directory, ``<common>/worktrees/<name>``."""
        common = worktree.git_dir
        writable = [admin]
        namespace = own_namespace(worktree.branch)
        if namespace is not None:
            writable += [
                f"{common}/refs/heads/{namespace}",
                f"{common}/logs/refs/heads/{namespace}",
            ]
        read_only = [
            f"{common}/objects",  # bound read-only: seen even where the rest is hidden
            f"{admin}/{OWN_COMMON}",
            *(f"{admin}/{OWN_OBJECTS}/{name}" for name in OWN_OBJECTS_READ_ONLY),
            *(f"{admin}/{name}" for name in ADMIN_READ_ONLY),
            f"{worktree.path}/.git",
        ]
        return cls(common, tuple(writable), tuple(read_only))


# In a worktree's own directory: what stands for the repository's git directory to
# anyone who follows the worktree's .git file (its commondir names it), and the
# object directory of the agent's own commits.
OWN_COMMON = "agentdeck-common"
OWN_OBJECTS = "agentdeck-objects"
# In the agent's object directory: its alternates (the repository's store), and the
# packs, which git reads before any loose object (one would shadow the repository's).
OWN_OBJECTS_READ_ONLY = ("info", "pack")
# In a worktree's own directory: where the repository is, where the worktree is, and
# configuration git reads (with extensions.worktreeConfig).
ADMIN_READ_ONLY = ("commondir", "gitdir", "config.worktree")


@dataclass(frozen=True)
class FileChange:
    """One file of a diff: lines added and removed (None for a binary file)."""

    path: str
    added: int | None
    removed: int | None


def parse_numstat(text: str) -> list[FileChange]:
    """``git diff --numstat -z`` output: ``added\tremoved\tpath\0`` (``-`` for binary;
    a rename is ``added\tremoved\t\0old\0new\0``)."""
    changes: list[FileChange] = []
    parts = iter(text.split("\0"))
    for entry in parts:
        if not entry:
            continue
        added, removed, path = [*entry.split("\t", 2), "", ""][:3]
        if not path:  # a rename: old, then new
            next(parts, "")
            path = next(parts, "")
        changes.append(FileChange(path, _count(added), _count(removed)))
    return changes


def _count(field: str) -> int | None:
    return int(field) if field.isdigit() else None


def dirty(status_porcelain: str) -> list[str]:
    """The paths ``git status --porcelain -z`` reports (tracked changes and untracked)."""
    paths: list[str] = []
    parts = iter(status_porcelain.split("\0"))
    for entry in parts:
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":  # a rename or copy carries its source next
            next(parts, "")
    return paths


_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class Start:
    """Where a new worktree starts, as one ``git rev-parse`` (``start_query``) says."""

    top: str  # the repository's top level
    git_dir: str  # its git directory
    commit: str  # the commit the base names
    head: str | None  # the current branch, as ``symbolic-ref --short`` names it; None: detached


def start_query(base: str | None, namespace: str) -> tuple[str, ...]:
    """One ``git rev-parse`` for every check a new worktree needs that reads refs:
    the repository, the commit ``base`` (default: HEAD) names, the current branch,
    and the branches already in the agent's directory of refs (``namespace``)."""
    return (
        "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir",
        f"{base or 'HEAD'}^{{commit}}", "--symbolic-full-name", "HEAD",
        f"--branches={namespace}", "--abbrev-ref", "HEAD",
    )  # fmt: skip


def parse_start(out: str) -> Start | None:
    """``start_query``'s answer when every check passed: None when it says anything
    else (a branch in the agent's directory, a path or a base git read otherwise
    than as asked), so the checks are made one by one to say which failed."""
    lines = out.split("\n")
    if len(lines) != 6 or lines[5] != "":
        return None
    top, git_dir, commit, full, short = lines[:5]
    if not (top.startswith("/") and git_dir.startswith("/") and _COMMIT.fullmatch(commit)):
        return None
    if full == "HEAD" and short == "HEAD":
        return Start(top, git_dir, commit, None)
    if not full.startswith("refs/heads/") or not short or short.startswith("-"):
        return None
    return Start(top, git_dir, commit, short)


@dataclass(frozen=True)
class WorktreeDiff:
    """What an agent in a worktree changed, against where it started (``against``,
    a commit): per file, and the patch (scrubbed of secrets, like the event log;
    empty when only the files were asked for)."""

    agent_id: str
    branch: str
    base: str  # the branch it started from
    against: str
    files: list[FileChange]
    patch: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "branch": self.branch,
            "base": self.base,
            "against": self.against,
            "files": [{"path": f.path, "added": f.added, "removed": f.removed} for f in self.files],
            "patch": self.patch,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorktreeDiff:
        return cls(
            agent_id=data["agent_id"],
            branch=data["branch"],
            base=data["base"],
            against=data["against"],
            files=[FileChange(f["path"], f["added"], f["removed"]) for f in data["files"]],
            patch=data["patch"],
        )


_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
MAX_BRANCH = 255


def branch_problem(name: str) -> str | None:
    """What makes ``name`` no branch git would make (``git check-ref-format
    --branch``'s rules, and no leading ``-`` that a git command would read as an
    option); None for a good name."""
    if not name:
        return "it is empty"
    if len(name) > MAX_BRANCH:
        return f"it is longer than {MAX_BRANCH} characters"
    if _REF_FORBIDDEN.search(name):
        return "it holds a space, a control character or one of ~^:?*[\\"
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        return "it starts with - or /, or ends with /, . or .lock"
    if ".." in name or "//" in name or "@{" in name or name == "@":
        return "it holds .., //, @{ or is @"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "a part of it starts with . or ends with .lock"
    return None
